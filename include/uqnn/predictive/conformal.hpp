#pragma once
/// @file Conformal prediction and temperature scaling over a method's predictions: pure functions.
///
/// Why: a method's own intervals hold their nominal coverage only when its model and posterior are
/// right. Split conformal prediction (Vovk et al. 2005; Lei et al. 2018) recalibrates them on held-out
/// rows so that, for exchangeable data, P(y in C(x)) >= 1 - alpha in finite samples, and at most
/// 1 - alpha + 1/(n + 1) when the scores have no ties. Each method is two steps: a score per
/// calibration row and its conformal quantile, then the intervals or sets on new rows.
#include <cstdint>
#include <vector>

#include "uqnn/core/rng.hpp"
#include "uqnn/core/types.hpp"

namespace uqnn {

/// The conformal quantile of calibration scores at miscoverage `alpha` in (0, 1): the
/// ceil((n + 1)(1 - alpha))-th smallest score; +infinity when that rank exceeds n (too few rows for
/// this alpha: the interval is the whole line). Lei et al. (2018), eq. 6.
double conformal_quantile(std::vector<double> scores, double alpha);

/// Intervals [lower, upper] per point.
struct ConformalIntervals {
  Vec lower, upper;
  double quantile = 0.0;  ///< the calibrated quantile of the scores
};

/// Split conformal regression with the predictive sd as normaliser (Lei et al. 2018, sec. 5.2):
/// score |y - mean| / sd on the calibration rows; intervals mean +- q sd. Sds must be > 0.
double normalized_split_conformal_quantile(const Vec& mean, const Vec& sd, const Vec& y, double alpha);
ConformalIntervals normalized_split_conformal(const Vec& mean, const Vec& sd, double quantile);

/// Conformalized quantile regression (Romano et al. 2019, eq. 6 and 7): with the predictive's own
/// alpha/2 and 1 - alpha/2 quantiles (lo, hi), score max(lo - y, y - hi); intervals [lo - q, hi + q].
double cqr_quantile(const Vec& lower, const Vec& upper, const Vec& y, double alpha);
ConformalIntervals cqr(const Vec& lower, const Vec& upper, double quantile);

/// CV+ (Barber, Candes, Ramdas and Tibshirani 2021, sec. 3, eq. 9): K models mu_{-k}, model k fitted
/// without fold k of the n training rows; the out-of-fold residuals R_i = |y_i - mu_{-k(i)}(x_i)|
/// (`residuals`, with `folds` k(i) in [0, K)) and the models' predictions at new points
/// (`model_means` [K, m], row k = mu_{-k}) give
///   C(x) = [ q-_alpha{ mu_{-k(i)}(x) - R_i }, q+_alpha{ mu_{-k(i)}(x) + R_i } ],
/// q+ the ceil((1 - alpha)(n + 1))-th smallest of the n values and q- the floor(alpha (n + 1))-th
/// smallest. For exchangeable rows P(y in C(x)) >= 1 - 2 alpha - min(2 (1 - 1/K) / (n/K + 1),
/// (1 - K/n) / (K + 1)) (their Theorem 4); jackknife+ is K = n, one row per fold, and then
/// >= 1 - 2 alpha (Theorem 1). In practice the coverage is near 1 - alpha. Bounds are -/+ infinity
/// when the rank falls outside 1..n (too few rows for alpha).
ConformalIntervals cv_plus(const Mat& model_means, const Vec& residuals, const IndexVec& folds, double alpha);

/// Adaptive prediction sets (APS, Romano et al. 2020) and their regularised form (RAPS, Angelopoulos
/// et al. 2021). With classes in decreasing probability, the score of class y of rank o(y) (1-based)
/// is sum of the probabilities of the classes before it + u p(y) + lambda (o(y) - k_reg)^+, with
/// u ~ U(0, 1) per row (randomised: exact coverage, sets may be empty); lambda = 0 is APS.
struct SetScoreOptions {
  double lambda = 0.0;   ///< RAPS penalty per class beyond k_reg (>= 0)
  Index k_reg = 0;       ///< classes free of the penalty (>= 0)
  bool randomized = true;  ///< u ~ U(0, 1); false: u = 1 (conservative sets; they can still be empty when the top class alone exceeds the threshold)
  void validate() const;
};
/// Score of each row's true class: probabilities [K, n], labels (class indices) [n].
Vec set_scores(const Mat& probabilities, const std::vector<Index>& labels, const SetScoreOptions& options, Rng& rng);
/// The sets {y : score(x, y) <= threshold} per row (class indices in decreasing probability).
std::vector<std::vector<Index>> prediction_sets(const Mat& probabilities, double threshold, const SetScoreOptions& options, Rng& rng);

/// Temperature scaling (Guo et al. 2017, sec. 4.2) of class probabilities: p_T proportional to
/// exp(log p / T), T fitted by minimising the NLL of calibration rows. The NLL is convex in
/// beta = 1/T (a log-sum-exp of functions linear in beta, minus a linear term), so Newton's method
/// on beta in a bracket finds the minimum.
struct TemperatureFit {
  double temperature = 1.0;
  Index iterations = 0;
  bool converged = false;  ///< |dNLL/dbeta| <= tolerance within max_iterations
  double gradient = 0.0;   ///< dNLL/dbeta (mean over rows) at the end
  double curvature = 0.0;  ///< d^2 NLL/dbeta^2 (mean over rows) at the end: n times it is the observed information
  double nll_before = 0.0, nll_after = 0.0;  ///< mean NLL at T = 1 and at the fitted T
};
/// `probabilities` [K, n] (K = 1: bernoulli P(y = 1), read as two classes), labels in [0, K) (bernoulli: 0/1).
TemperatureFit fit_temperature(const Mat& probabilities, const std::vector<Index>& labels, Index max_iterations = 100,
                               double tolerance = 1e-10);
/// The probabilities at temperature T > 0 (same shape as `probabilities`).
Mat apply_temperature(const Mat& probabilities, double temperature);

}  // namespace uqnn

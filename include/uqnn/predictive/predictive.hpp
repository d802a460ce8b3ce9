#pragma once
/// @file Predictions from weight draws, the one code path shared by every method: MAP (one draw),
/// MCMC draws, and samples of an approximate posterior.
///
/// For draws theta_s, s = 1..S (seed 001): predictive mean ybar = (1/S) sum_s mu(x; theta_s),
/// epistemic variance (1/(S-1)) sum_s (mu_s - ybar)^2, and the total predictive variance adds the
/// mean observation-noise variance. Intervals are central quantiles of the predictive mixture.
#include <map>
#include <vector>

#include "uqnn/core/draws.hpp"
#include "uqnn/core/rng.hpp"
#include "uqnn/nn/model.hpp"
#include "uqnn/prob/likelihood.hpp"

namespace uqnn {

/// Per-draw predictions on a batch: means[s] and noise_variance[s] are [target_dim, n].
struct PredictiveDraws {
  std::vector<Mat> means;
  std::vector<Mat> noise_variance;
  Index num_draws() const { return static_cast<Index>(means.size()); }
};

/// Evaluates the network for every draw (draws hold network parameters followed by likelihood extras).
PredictiveDraws predict_draws(const Model& model, const Likelihood& likelihood, const Draws& draws, const Mat& inputs);

struct PredictiveSummary {
  Mat mean;          ///< [t, n]
  Mat epistemic_sd;  ///< sd of the draws' means (0 for one draw)
  Mat sd;            ///< total predictive sd: sqrt(epistemic variance + mean noise variance)
  /// Central interval bounds per nominal level (e.g. 0.95 -> 2.5% and 97.5% quantiles).
  std::map<double, std::pair<Mat, Mat>> intervals;
};

/// Up to this many draws, summarize_predictive's interval bounds are the exact quantiles of the
/// predictive Gaussian mixture; above it, they are quantiles of samples from it.
inline constexpr Index kExactQuantileMaxDraws = 32;

/// Summarises draws: mean, epistemic and total sd, and the central intervals at `levels`. Each
/// draw's predictive is N(mean, noise variance), so the predictive is a mixture of S Gaussians. With
/// at most kExactQuantileMaxDraws draws the interval bounds are its exact quantiles (Newton's method
/// on the mixture's CDF; `rng` is not used). With more, they are type-7 quantiles of max(S, 2000)
/// samples of the mixture drawn from `rng` (equally many per draw): exact evaluation would cost S
/// normal CDFs per Newton step and point, more than the samples.
PredictiveSummary summarize_predictive(const PredictiveDraws& draws, const std::vector<double>& levels, Rng& rng);

/// Applies an affine target transform y = mean + scale * y_std to a summary (sd scaled by |scale|).
void rescale_summary(PredictiveSummary& summary, const Vec& target_mean, const Vec& target_scale);

/// Regression metrics on data with known targets (all in the same units as the summary).
struct RegressionMetrics {
  double rmse = 0.0;
  double nll = 0.0;   ///< mean Gaussian NLL with the predictive mean and total sd
  double lppd = 0.0;  ///< seed 003 eq. 7: mean over points of log (1/S) sum_s p(y_i | theta_s)
  std::map<double, double> coverage;  ///< fraction of targets inside each central interval
  Index n = 0;
};

/// `log_scale` is sum over targets of log(target scale): p_original(y) = p_standardised(y_std) / scale,
/// so LPPD in original units subtracts it.
RegressionMetrics regression_metrics(const PredictiveDraws& draws, const PredictiveSummary& summary_original,
                                     const Mat& targets_standardised, const Mat& targets_original, double log_scale);

/// Classification metrics of posterior predictive class probabilities (the draws' probabilities
/// averaged, i.e. PredictiveSummary::mean of a bernoulli or categorical fit).
struct ClassificationMetrics {
  double accuracy = 0.0;  ///< share of predictions whose most probable class is the label
  double nll = 0.0;       ///< -mean log p(label): the predictive's negative log likelihood (= -LPPD)
  /// Brier score (Brier 1950): mean over points of sum over classes of (p_k - 1[y = k])^2; for a
  /// bernoulli output the two-class sum halved, (p - y)^2, as scikit-learn's brier_score_loss.
  double brier = 0.0;
  /// Expected calibration error (Guo et al. 2017, eq. 3): sum over equal-width bins of the top
  /// class's probability of (n_b / n) |accuracy_b - confidence_b|.
  double ece = 0.0;
  struct Bin {
    double lower = 0.0, upper = 0.0;  ///< the bin's confidence range
    double confidence = 0.0;          ///< mean top-class probability of its points
    double accuracy = 0.0;            ///< share of its points classified right
    Index count = 0;
  };
  std::vector<Bin> bins;        ///< the reliability diagram's bins (empty ones included)
  Vec entropy;                  ///< predictive entropy of each point (nats)
  Index n = 0;                  ///< points (bernoulli: outputs x rows, each a binary prediction)
};

/// `probabilities`: a bernoulli fit's P(y = 1) [t, n] with 0/1 `targets` [t, n], or a categorical
/// fit's class probabilities [K, n] with integer class `targets` [1, n] (`categorical` true).
ClassificationMetrics classification_metrics(const Mat& probabilities, const Mat& targets, bool categorical, int num_bins = 15);

}  // namespace uqnn

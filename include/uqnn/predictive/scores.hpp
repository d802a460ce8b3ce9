#pragma once
/// @file Scores of a predictive against observed outcomes: pure functions, no I/O.
///
/// Why here: `uqnn evaluate`, the Python module and the image networks score predictives with the
/// same code. Accuracy, NLL, Brier and equal-width ECE of class probabilities are
/// classification_metrics (predictive.hpp); this file adds what it lacks: CRPS, PIT and the
/// calibration curve for regression, adaptive-bin ECE, MCE and the risk-coverage curve for
/// classification, and the detection scores of out-of-distribution inputs.
///
/// Bad arguments (empty inputs, mismatched lengths, a single class where two are needed,
/// non-finite values) throw std::invalid_argument naming the argument.
#include <map>
#include <string>
#include <vector>

#include "uqnn/core/types.hpp"
#include "uqnn/predictive/predictive.hpp"

namespace uqnn {

// ---------------------------------------------------------------------------------------------
// Regression

/// A regression predictive at n points, in one of three forms: a Gaussian per point (mean, sd),
/// an equally weighted Gaussian mixture per point (one component per weight draw: S x n means and
/// sds), or S predictive samples per point. CRPS, PIT and NLL use the form's own distribution.
class RegressionPredictive {
 public:
  enum class Form { Gaussian, Mixture, Samples };
  /// N(mean_i, sd_i^2) at each point; sd > 0.
  static RegressionPredictive gaussian(Vec mean, Vec sd);
  /// (1/S) sum_s N(means(s, i), sds(s, i)^2) at point i; sds >= 0 with a positive sd at every
  /// point (a mixture of point masses has no density).
  static RegressionPredictive mixture(Mat means, Mat sds);
  /// Samples(s, i): the s-th of S >= 2 samples at point i (the empirical distribution).
  static RegressionPredictive samples(Mat samples);

  Form form() const { return form_; }
  Index size() const { return form_ == Form::Gaussian ? mean_.size() : a_.cols(); }
  Index num_components() const { return form_ == Form::Gaussian ? 1 : a_.rows(); }
  /// Predictive mean and sd per point (a mixture's total sd; the samples' sd with divisor S - 1).
  const Vec& mean() const { return mean_; }
  const Vec& sd() const { return sd_; }
  /// P(Y_i <= y) (samples: the share of samples <= y).
  double cdf(Index i, double y) const;
  /// The p-quantile at point i, 0 < p < 1 (samples: the type-7 quantile of numpy and R).
  double quantile(Index i, double p) const;
  /// log p(y) at point i: the Gaussian's, the mixture's (log-sum-exp over its components with
  /// sd > 0), and for samples that of the Gaussian with their mean and sd.
  double log_density(Index i, double y) const;
  /// The continuous ranked probability score (Gneiting and Raftery 2007, eq. 20) at point i.
  double crps(Index i, double y) const;

 private:
  Form form_ = Form::Gaussian;
  Vec mean_, sd_;
  Mat a_, b_;  ///< Mixture: means and sds; Samples: the samples, each column sorted
};

/// The p-quantile of the Gaussian mixture (1/S) sum_k N(mu_k, sd_k^2), 0 < p < 1, by Newton's
/// method from `start` inside a bracket, with bisection where a step leaves it (defined beside
/// summarize_predictive, whose exact interval bounds it computes).
double mixture_quantile(const double* mu, const double* sd, Index S, double p, double start);

/// Above this many components the CRPS of a mixture is that of kCrpsMixtureSamples samples drawn
/// evenly from it (its exact form costs S^2 normal CDFs per point).
inline constexpr Index kCrpsExactMaxComponents = 256;

/// CRPS of N(mean, sd^2) at y (Gneiting and Raftery 2007, eq. 5 of Gneiting et al. 2005):
/// sd [z (2 Phi(z) - 1) + 2 phi(z) - 1/sqrt(pi)], z = (y - mean) / sd; |y - mean| when sd = 0.
double crps_gaussian(double mean, double sd, double y);
/// CRPS of the mixture (1/S) sum_k N(mu_k, sd_k^2) at y (Grimit et al. 2006, eq. 4):
/// (1/S) sum_k A(y - mu_k, sd_k^2) - (1/(2 S^2)) sum_{k,l} A(mu_k - mu_l, sd_k^2 + sd_l^2) with
/// A(m, v) = 2 sqrt(v) phi(m / sqrt(v)) + m (2 Phi(m / sqrt(v)) - 1) = E|m + sqrt(v) Z|.
double crps_mixture(const double* mu, const double* sd, Index S, double y);
/// CRPS of the empirical distribution of `sorted` (ascending, m >= 1) at y, the energy form
/// (Gneiting and Raftery 2007, eq. 21): (1/m) sum |x_j - y| - (1/(2 m^2)) sum_{j,k} |x_j - x_k|,
/// as properscoring's crps_ensemble; O(m) on sorted samples.
double crps_sorted_samples(const double* sorted, Index m, double y);

/// Nominal levels reported by default: coverage and width of the central intervals.
inline const std::vector<double> kDefaultIntervalLevels = {0.5, 0.8, 0.9, 0.95};

/// Scores of a regression predictive on targets y (one per point).
struct RegressionScores {
  Index n = 0;
  double rmse = 0.0;
  double mae = 0.0;   ///< mean |y - mean|
  double nll = 0.0;   ///< mean -log p(y) under the predictive's own form (samples: a Gaussian with their mean and sd)
  double gaussian_nll = 0.0;  ///< mean -log N(y; mean, sd^2), as `uqnn fit` reports nll
  double crps = 0.0;  ///< mean CRPS
  std::map<double, double> coverage;  ///< per nominal level: share of y inside the central interval
  std::map<double, double> width;     ///< per nominal level: mean width of the central interval
  Vec pit;                            ///< probability integral transform F_i(y_i) per point
  /// The calibration curve: at nominal levels 0.05, 0.10, ..., 0.95, the share of points whose PIT
  /// lies in the central interval [(1 - level)/2, (1 + level)/2], i.e. the observed coverage of the
  /// central interval at that level (Gneiting et al. 2007; Kuleshov et al. 2018).
  std::vector<double> calibration_nominal, calibration_observed;
};

/// Scores `predictive` on `y` at the central interval `levels` (each in (0, 1)).
RegressionScores score_regression(const RegressionPredictive& predictive, const Vec& y,
                                  const std::vector<double>& levels = kDefaultIntervalLevels);

/// Observed coverage of the central interval at each nominal level, from PIT values:
/// share of pit in [(1 - level)/2, (1 + level)/2].
std::vector<double> coverage_from_pit(const Vec& pit, const std::vector<double>& levels);

// ---------------------------------------------------------------------------------------------
// Classification

/// How calibration bins are formed: equal-width bins of confidence, or adaptive bins holding equal
/// numbers of points (Nixon et al. 2019, "Measuring calibration in deep learning").
enum class BinScheme { EqualWidth, EqualMass };

/// Expected and maximum calibration error over bins of the top-class confidence (Guo et al. 2017,
/// eq. 3 and 5), with the reliability diagram's bins (equal-width: empty bins included).
struct CalibrationError {
  double ece = 0.0;  ///< sum over bins of (n_b / n) |accuracy_b - confidence_b|
  double mce = 0.0;  ///< max over non-empty bins of |accuracy_b - confidence_b|
  std::vector<ClassificationMetrics::Bin> bins;
};

/// `confidence` in [0, 1] and `correct` (1 right, 0 wrong) per point; `num_bins` >= 1. Equal-mass
/// bins split the points sorted by confidence into num_bins groups of sizes differing by at most
/// one (ties may straddle a boundary; the split follows the stable sort).
CalibrationError calibration_error(const Vec& confidence, const Vec& correct, int num_bins, BinScheme scheme);

/// The selective-prediction (risk-coverage) curve (Geifman and El-Yaniv 2017; Geifman et al. 2019):
/// points accepted in order of decreasing confidence; risk at coverage k/n is the error rate of
/// the k accepted. Ties in confidence are accepted together: within a tie group the risk is its
/// expectation over the orders of the group (errors before it plus the group's error rate times
/// the accepted share of it), so the curve does not depend on the input order.
struct RiskCoverage {
  Vec coverage;  ///< k / n, k = 1..n
  Vec risk;      ///< error rate of the k most confident points
  double aurc = 0.0;  ///< area under the curve: mean of risk over k = 1..n
};
RiskCoverage risk_coverage(const Vec& confidence, const Vec& correct);

/// Top-class confidence and correctness per classified point, as classification_metrics counts
/// them: categorical [K, n] probabilities with class indices [1, n], or bernoulli P(y = 1) [t, n]
/// with 0/1 targets (each output of each row a point).
void confidence_and_correct(const Mat& probabilities, const Mat& targets, bool categorical, Vec& confidence, Vec& correct);

/// Scores of class probabilities: classification_metrics (accuracy, NLL, Brier, equal-width ECE
/// and its bins) plus MCE, adaptive-bin ECE/MCE and the risk-coverage curve.
struct ClassificationScores {
  ClassificationMetrics basic;
  CalibrationError equal_width, equal_mass;
  RiskCoverage risk_coverage;
};
ClassificationScores score_classification(const Mat& probabilities, const Mat& targets, bool categorical, int num_bins = 15);

// ---------------------------------------------------------------------------------------------
// Out-of-distribution detection

/// Per-point uncertainty of class probabilities, each larger for a more uncertain point.
struct UncertaintyScores {
  Vec predictive_entropy;  ///< H[mean_s p_s] (nats)
  Vec expected_entropy;    ///< mean_s H[p_s]
  Vec mutual_information;  ///< H[mean_s p_s] - mean_s H[p_s] (Houlsby et al. 2011; Depeweg et al. 2018); 0 for one draw
  Vec max_probability;     ///< max_k mean_s p_s(k) (smaller = more uncertain)
};
/// `draws[s]` holds draw s's class probabilities [K, n] (columns sum to 1; K = 1 is read as a
/// bernoulli P(y = 1), i.e. two classes).
UncertaintyScores uncertainty_scores(const std::vector<Mat>& draws);

/// Detection of out-of-distribution points by a score (larger = more likely OOD); OOD is the
/// positive class.
struct DetectionScores {
  double auroc = 0.0;  ///< area under the ROC curve, ties counted one half (= scikit-learn's roc_auc_score)
  double aupr = 0.0;   ///< average precision, sum_k (R_k - R_{k-1}) P_k over distinct thresholds (= average_precision_score)
  double fpr_at_95_tpr = 0.0;  ///< the smallest false-positive rate at a threshold with true-positive rate >= 0.95
};
DetectionScores detection_scores(const Vec& in_distribution, const Vec& out_of_distribution);

/// The three detectors of uqnn evaluate's OOD report: predictive entropy, mutual information and
/// max probability (scored as 1 - max probability), in-distribution rows against OOD rows.
std::map<std::string, DetectionScores> ood_detection(const UncertaintyScores& in_distribution, const UncertaintyScores& out_of_distribution);

}  // namespace uqnn

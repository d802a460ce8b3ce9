#pragma once
/// @file Conformal calibration of a fit (`uqnn fit --conformal METHOD`, `BNN(conformal=...)`): the
/// fit holds out calibration rows, calibrates on them after the method has run, and records the
/// result in model.json; predictions.csv, `uqnn predict` and the Python module then give the
/// conformal intervals (regression) or prediction sets and temperature-scaled probabilities
/// (classification) beside the method's own. The scores and quantiles are those of
/// predictive/conformal.hpp; this service only joins them to a fit's predictions and files.
///
/// Why: a method's intervals hold their level only when its model and posterior are right; split
/// conformal prediction makes P(y in C(x)) >= level hold in finite samples for exchangeable rows
/// whatever the method (Vovk et al. 2005; Lei et al. 2018).
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "uqnn/core/registry.hpp"
#include "uqnn/core/rng.hpp"
#include "uqnn/core/types.hpp"
#include "uqnn/predictive/conformal.hpp"
#include "uqnn/predictive/predictive.hpp"

namespace uqnn {

class FittedModel;

/// A conformal method of `--conformal`.
struct ConformalKind {
  std::string name = {};
  std::string summary = {};
  std::string reference = {};
  bool classification = false;  ///< works on class probabilities (else on a regression predictive)
  /// cv+, jackknife+: calibrated on the training rows out of fold, by the members of an ensemble-style
  /// method each trained without its fold (no calibration rows are held out).
  bool out_of_fold = false;
};
/// none, split, cqr, cv+, jackknife+ (regression); aps, raps, temperature (classification).
const Registry<ConformalKind>& conformal_kinds();

/// The fit's conformal settings (the "conformal" option group; the calibration rows are chosen by
/// --calibration-fraction or --calibration-indices in the data group).
struct ConformalConfig {
  std::string method = "none";
  double confidence_level = 0.9;  ///< 1 - alpha, as MAPIE's confidence_level
  double raps_lambda = 0.01;      ///< RAPS penalty per class beyond raps_k_reg (Angelopoulos et al. 2021)
  Index raps_k_reg = 1;           ///< classes free of the RAPS penalty
  bool enabled() const { return method != "none"; }
};

/// What calibration found, as model.json's "conformal" records it.
struct ConformalCalibration {
  std::string method;
  double confidence_level = 0.9;
  Index num_calibration_rows = 0;
  /// split: the quantile of |y - mean| / sd per target; cqr: the quantile of max(lo - y, y - hi) per
  /// target (data units); aps, raps: one threshold on the set scores.
  std::vector<double> quantiles;
  double temperature = 1.0;  ///< temperature scaling (Guo et al. 2017)
  SetScoreOptions set_options;  ///< aps, raps (not randomised: sets are never empty, coverage >= level)
  bool categorical = false;     ///< classification: categorical class probabilities (else bernoulli outputs)
  /// cv+, jackknife+: the out-of-fold residuals |y_i - mu_{-k(i)}(x_i)| [t, n] of the training rows
  /// (data units) and their folds k(i) (member k left fold k out).
  Mat residuals;
  IndexVec folds;
  bool out_of_fold() const;
  nlohmann::json to_json() const;
  /// Throws InputError naming `where` (model.json's path) and the field.
  static ConformalCalibration from_json(const nlohmann::json& j, const std::string& where);
};

/// Conformal predictions on some rows.
struct ConformalPrediction {
  Mat lower, upper;   ///< regression: [t, n] in data units
  Mat probabilities;  ///< temperature: the scaled probabilities, shaped as the summary's mean
  /// aps, raps: [K, n] 1 for the classes in each row's set (bernoulli: [2 t, n], rows 2o, 2o+1 = classes 0, 1 of output o)
  Mat in_set;
};

/// The methods cv+ and jackknife+ apply to (the ensemble family: their members can each leave a fold
/// out), for their refusals.
std::vector<std::string> out_of_fold_methods();

/// Largest training set jackknife+ takes (one member per row); above it, cv+ with K members.
constexpr Index kJackknifePlusMaxRows = 200;

/// The fold of each of the n training rows for `method`: jackknife+ row i alone in fold i (K = n);
/// cv+ a random balanced assignment to K folds (sizes differ by at most one) from Rng(seed, a stream
/// of its own). The method's members (EnsembleParams::fold_of_row) and the calibration read the same.
IndexVec out_of_fold_assignment(const std::string& method, Index num_rows, Index folds, std::uint64_t seed);

/// The members' means [t, m] at some rows, in data units, from the per-draw means in standardised
/// units (one draw per member).
std::vector<Mat> member_means(const PredictiveDraws& draws, const Vec& target_mean, const Vec& target_scale);

/// cv+, jackknife+: calibrates on the training rows, whose member means (data units, member k
/// trained without fold k) and targets [t, n] are given with their folds. Throws InputError when
/// the rows are too few for the level.
ConformalCalibration calibrate_out_of_fold(const ConformalConfig& config, const std::vector<Mat>& member_means_on_training,
                                           const Mat& targets, const IndexVec& folds);

/// Central levels the predictive summary needs for `method` (cqr: the confidence level).
std::vector<double> conformal_summary_levels(const std::string& method, double confidence_level);

/// Calibrates on rows with known targets. `summary` is the method's predictive in the data's units
/// (with the interval at the confidence level for cqr); `targets` [t, n] (classification: class
/// indices [1, n] or 0/1 [t, n]); `categorical` for a categorical likelihood. Throws InputError
/// when the rows are too few for the level (the interval would be the whole line).
ConformalCalibration calibrate_conformal(const ConformalConfig& config, const PredictiveSummary& summary, const Mat& targets,
                                         bool categorical);

/// Applies a calibration to the method's predictive summary of new rows; cv+ and jackknife+ read
/// the members' means there (member_means) instead.
ConformalPrediction apply_conformal(const ConformalCalibration& calibration, const PredictiveSummary& summary,
                                    const std::vector<Mat>& member_means = {});

/// The columns predictions.csv and `uqnn predict` add, one value per row: regression
/// <name>_conformal_lower / _upper; temperature <name>_calibrated; aps/raps set_<k> (1 when class
/// k is in the row's set; bernoulli <name>_set_0 / _set_1) and set_size. `output_names` name the
/// summary's rows as the _mean columns do.
std::vector<std::pair<std::string, Vec>> conformal_columns(const ConformalCalibration& calibration, const ConformalPrediction& prediction,
                                                           const std::vector<std::string>& output_names);

/// Coverage of the conformal intervals or sets on rows with known targets, with their mean width
/// or set size (temperature: NLL and accuracy of the scaled probabilities): metrics.json's entries.
nlohmann::json conformal_scores(const ConformalCalibration& calibration, const ConformalPrediction& prediction, const Mat& targets,
                                bool categorical);

/// The calibration a saved fit recorded in model.json, or nothing when it was not calibrated.
std::optional<ConformalCalibration> saved_conformal(const FittedModel& fitted);

/// A saved fit's conformal predictions at `inputs` (data units), or nothing when it was not
/// calibrated (the Python module's BNN.predict_conformal).
std::optional<std::pair<ConformalCalibration, ConformalPrediction>> conformal_predict(const FittedModel& fitted, const Mat& inputs,
                                                                                     Rng& rng);

}  // namespace uqnn

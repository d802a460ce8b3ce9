#pragma once
/// @file `uqnn evaluate`: scores a fit (a `uqnn fit` run directory) or another tool's predictions on
/// labelled rows, optionally with out-of-distribution rows and conformal recalibration, and writes
/// metrics.json and the calibration figures into one output directory (all or nothing).
///
/// External predictions are a CSV with one row per labelled row, in one of three forms, told apart
/// by their column names: `mean` and `sd` (a Gaussian per row), `sample_*` columns (predictive
/// samples), or `prob_0`, `prob_1`, ... (class probabilities). The targets are the column
/// `target` of the data file (or of the predictions file when no data file is given).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "uqnn/core/types.hpp"

namespace uqnn {

struct EvaluateConfig {
  std::filesystem::path model_dir;    ///< a `uqnn fit` run directory, or
  std::filesystem::path predictions;  ///< a CSV of external predictions (see the file comment)
  std::filesystem::path data;         ///< labelled rows: the model's inputs and targets (with --model)
  std::string target = "y";           ///< target column for external predictions
  std::filesystem::path ood_data;         ///< out-of-distribution inputs (with --model; classification)
  std::filesystem::path ood_predictions;  ///< class probabilities of OOD rows (with --predictions)
  std::filesystem::path out;  ///< default: MODEL/evaluation_<data stem>, else uqnn-evaluate
  std::vector<double> levels = {0.5, 0.8, 0.9, 0.95};  ///< nominal levels of the central intervals
  int bins = 15;  ///< calibration bins (equal-width and equal-mass)
  /// "" (none), split, cqr (regression), aps, raps, temperature (classification).
  std::string conformal;
  double calibration_fraction = 0.0;         ///< share of the --data rows held out for calibration
  std::filesystem::path calibration_data;    ///< or separate labelled rows (a predictions CSV with --predictions)
  double raps_lambda = 0.01;  ///< RAPS penalty (Angelopoulos et al. 2021)
  Index raps_k_reg = 1;       ///< classes free of the RAPS penalty
  std::uint64_t seed = 0;     ///< calibration split, randomised sets, interval sampling
  bool figures = true;
  /// Throws InputError naming the flag for inconsistent or out-of-range settings.
  void validate() const;
};

struct EvaluateReport {
  nlohmann::json metrics;  ///< also written to OUT/metrics.json
  std::vector<std::filesystem::path> files;
  std::vector<std::string> figure_warnings;
};

EvaluateReport run_evaluate(const EvaluateConfig& config);

class FittedModel;

/// What `uqnn evaluate --model` scores (metrics.json's metrics, without figures, conformal or OOD
/// sections) for a fit on labelled rows in memory: `inputs` [d, n] and `targets` in the data's units
/// (regression [t, n]; classification class indices [1, n] or 0/1 [t, n]). `uqnn compare` reads it.
nlohmann::json evaluate_fitted(const FittedModel& fitted, const Mat& inputs, const Mat& targets,
                               const std::vector<double>& levels = {0.5, 0.8, 0.9, 0.95}, int bins = 15);

/// The conformal methods `uqnn evaluate --conformal` accepts: conformal_kinds() but "none" and the
/// out-of-fold ones (cv+, jackknife+), which need a fit's members.
const std::vector<std::string>& conformal_methods();

}  // namespace uqnn

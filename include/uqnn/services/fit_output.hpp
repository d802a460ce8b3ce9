#pragma once
/// @file Writing a finished fit: model.json, draws.csv, predictions.csv, metrics.json and figures.
/// Shared by every method so that outputs look the same whatever produced the draws.
#include <optional>

#include "uqnn/diagnostics/warnings.hpp"
#include "uqnn/services/fit.hpp"

namespace uqnn {

struct FitOutput {
  const FitConfig& config;
  const Dataset& data;  ///< original units, all rows
  const Split& split;
  const Standardizer& standardizer;
  std::shared_ptr<const Posterior> posterior;
  const MethodResult& result;
  double seconds = 0.0;
  const Mat* ood_inputs = nullptr;  ///< out-of-distribution inputs, original units (--ood-data), or none
  /// predictions.csv repeats every row's inputs; image data (thousands of pixels a row) give the
  /// row's index in --data (then --test-data) instead.
  bool inputs_in_predictions = true;
};

FitReport write_fit_output(const FitOutput& output);

/// The 300 inputs over which the figure of a one-input regression draws its predictive: the data's
/// range, padded by a quarter of it on each side (original units, 1 x 300).
Mat predictive_figure_grid(const Mat& inputs);

/// The warning for input columns the standardiser found constant (kept with scale 1), if any.
std::optional<diagnostics::Warning> constant_inputs_warning(const Standardizer& standardizer);

/// Writes draws in long CSV form, chain by chain (chain, draw, then, when the draws have sampler
/// statistics (MCMC), the sampler's columns as CmdStan names them: lp__, accept_stat__, stepsize__,
/// treedepth__, n_leapfrog__, divergent__, energy__, those that are finite in every draw; then one
/// column per parameter), readable by `uqnn diagnose` and ArviZ.
void write_draws_csv(const std::filesystem::path& path, const ParamLayout& layout, const Draws& draws);
/// Reads draws.csv back by chain (checks the column names against `layout`; skips the sampler's
/// `__` columns, so the draws come back without statistics).
Draws read_draws_csv(const std::filesystem::path& path, const ParamLayout& layout);

}  // namespace uqnn

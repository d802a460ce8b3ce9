#pragma once
/// @file Writing a finished fit: model.json, draws.csv, predictions.csv, metrics.json and figures.
/// Shared by every method so that outputs look the same whatever produced the draws.
#include <optional>

#include "uqnn/core/registry.hpp"

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

/// The formats a run's draws are written in (--draws-format): draws.csv, or draws.npy (the
/// parameters, float64 [draws, K], rows in draws.csv's order) with draws_stats.csv (chain, draw and
/// the sampler's statistics, one row per draw). auto picks npy above kNpyDrawsAboveK parameters.
struct DrawsFormatKind {
  std::string name;
  std::string summary;
};
const Registry<DrawsFormatKind>& draws_format_kinds();
/// Above this many parameters `--draws-format auto` writes draws.npy: a CSV row of 100,000 doubles
/// is about 2.5 MB of text, beyond what spreadsheets open (Excel: 16,384 columns; LibreOffice:
/// 16,384), and formatting and parsing it costs more than the sampler's step for such models.
inline constexpr Index kNpyDrawsAboveK = 100000;
/// The file name (draws.csv or draws.npy) `format` (csv, npy or auto) gives for K parameters.
std::string draws_file_name(const std::string& format, Index num_parameters);

/// Writes draws.npy (`path`: the parameters, one row per draw, chain after chain, written one row
/// at a time to a temporary file renamed when complete) and, beside it, `<stem>_stats.csv` (chain,
/// draw and the sampler's statistics, as draws.csv has them).
void write_draws_npy(const std::filesystem::path& path, const Draws& draws);
/// The statistics file beside a draws.npy: draws_stats.csv for draws.npy.
std::filesystem::path draws_stats_path(const std::filesystem::path& npy_path);
/// Reads draws.npy (and its statistics file, for the chains) back by chain, holding the draws once
/// (the rows are read into their chains one at a time). InputError naming the file and what is
/// wrong: not a .npy file, not float64 in C order, not [draws, K] with the layout's K, a length that
/// disagrees with the header (truncated), rows that disagree with the statistics file.
Draws read_draws_npy(const std::filesystem::path& path, const ParamLayout& layout);
/// read_draws_npy for a .npy file, read_draws_csv otherwise.
Draws read_draws_file(const std::filesystem::path& path, const ParamLayout& layout);
/// A run directory's draws file: draws.npy when there is one, else draws.csv.
std::filesystem::path run_draws_path(const std::filesystem::path& dir);

}  // namespace uqnn

#pragma once
/// @file Ready-made figures the solvers and examples write after a fit.
///
/// Every function validates its inputs (std::invalid_argument naming the argument on mismatched
/// lengths), builds a Figure and saves it; the format follows the extension (.png or .svg). Width
/// and height of 0 pick a size from the panel grid.
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "uqnn/core/types.hpp"
#include "uqnn/plot/figure.hpp"
#include "uqnn/predictive/predictive.hpp"

namespace uqnn::plot {

/// A 1-D regression predictive: training data, predictive mean and standard deviation on a grid,
/// optionally the true function and function draws. One row of `sample_paths` is one draw over
/// `x_grid` (may be empty).
struct Predictive1d {
  std::string title;
  Vec x_train, y_train;       ///< training data (same length; may be empty)
  Vec x_grid;                 ///< grid, increasing
  Vec mean, sd;               ///< predictive mean and sd on the grid (sd >= 0)
  std::optional<Vec> truth;   ///< true function on the grid
  Mat sample_paths;           ///< [num_paths, grid size]; drawn as thin lines
};

/// Checks a Predictive1d (lengths, sd >= 0); throws std::invalid_argument naming the field.
void validate(const Predictive1d& p);

/// Draws `p` on `panel`: +-2 sd and +-1 sd bands (two shades), sample paths, truth (dashed),
/// predictive mean and the training points.
void draw_predictive_1d(Panel& panel, const Predictive1d& p);

/// Writes a 1-D predictive figure (see draw_predictive_1d).
void plot_predictive_1d(const std::filesystem::path& path, const VecIn& x_train, const VecIn& y_train,
                        const VecIn& x_grid, const VecIn& mean, const VecIn& sd,
                        const std::optional<Vec>& truth = std::nullopt, const std::string& title = "",
                        int width = 0, int height = 0);

/// Writes a 1-D predictive figure from function draws: row r of `sample_paths` is one draw over
/// `x_grid` (at least 2 rows). Mean and sd bands are the draws' mean and sd; up to
/// `max_paths_drawn` draws are also drawn as thin lines. (A separate name rather than an overload
/// of plot_predictive_1d: a Vec converts to Mat, so the two would be ambiguous for sd vs draws.)
void plot_predictive_1d_from_draws(const std::filesystem::path& path, const VecIn& x_train, const VecIn& y_train,
                        const VecIn& x_grid, const Mat& sample_paths,
                        const std::optional<Vec>& truth = std::nullopt, const std::string& title = "",
                        int max_paths_drawn = 30, int width = 0, int height = 0);

/// Writes a parity plot: predicted vs true values with +-1 sd error bars when `y_sd` is given,
/// the y = x diagonal, equal axes, and the RMSE in the legend.
void plot_parity(const std::filesystem::path& path, const VecIn& y_true, const VecIn& y_pred,
                 const std::optional<Vec>& y_sd = std::nullopt, const std::string& title = "",
                 int width = 0, int height = 0);

/// One panel of plot_parity_grid: a method's predictions against the truth.
struct ParityPanel {
  std::string title;
  Vec y_true, y_pred;
  std::optional<Vec> y_sd;
};

/// Writes one parity panel (as plot_parity) per entry, side by side (up to 3 in a row), with the
/// same axes in every panel so that methods compare at a glance.
void plot_parity_grid(const std::filesystem::path& path, const std::vector<ParityPanel>& panels, const std::string& title = "");

/// Named series in drawing order (a std::map converts: `SeriesList(m.begin(), m.end())`).
using SeriesList = std::vector<std::pair<std::string, std::vector<double>>>;

/// Options of plot_history.
struct HistoryOptions {
  // {}: callers' designated initializers ({.log_y = true}) may leave a field out without GCC 12's
  // -Wmissing-field-initializers, which it gives for members with no default initializer.
  std::string title{};
  std::string x_label = "iteration";
  std::string y_label{};
  bool log_y = false;  ///< log scale; every finite value must then be > 0
  int width = 0, height = 0;
};

/// Writes optimisation histories (loss, ELBO, ...): one line per series against its iteration
/// (1, 2, ...). Series may differ in length; non-finite values leave gaps.
void plot_history(const std::filesystem::path& path, const SeriesList& series,
                  const HistoryOptions& options = {});

/// Options of plot_traces.
struct TraceOptions {
  std::string title{};  // {}: as in HistoryOptions
  bool density = true;  ///< add a left column with per-chain histograms (ArviZ plot_trace layout)
  int bins = 30;        ///< histogram bins
  int width = 0, height = 0;
};

/// Writes MCMC trace plots: one row per named quantity, one line per chain. Each matrix is
/// [chain, draw] (the diagnostics layout). Throws std::invalid_argument on an empty list or an
/// empty matrix.
void plot_traces(const std::filesystem::path& path, const std::vector<std::pair<std::string, Mat>>& quantities,
                 const TraceOptions& options = {});

/// Options of plot_side_by_side.
struct SideBySideOptions {
  std::string title;
  int cols = 0;        ///< panels per row; 0 = automatic (up to 3 in a row; 4 as 2 x 2)
  bool shared_y = true;  ///< same y range in every panel (x is always shared)
  int width = 0, height = 0;
};

/// Writes one 1-D predictive panel per method, on the same axes, for comparing methods.
void plot_side_by_side(const std::filesystem::path& path, const std::vector<Predictive1d>& panels,
                       const SideBySideOptions& options = {});

/// Writes a classification fit's figure: the reliability diagram (accuracy against mean confidence
/// per bin, bins without points left out; the diagonal of perfect calibration; ECE and accuracy in
/// the legend) beside the histogram of predictive entropy.
void plot_classification(const std::filesystem::path& path, const ClassificationMetrics& metrics, const std::string& title);

}  // namespace uqnn::plot

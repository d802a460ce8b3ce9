#pragma once
/// @file Figures of DEI-MCMC runs (seed 003), drawn with the plot module: chain-wise expanding-window
/// LPPD traces (Fig. 13), per-layer R-hat / cR-hat / ESS (Figs. 8, 9) and calibration (Fig. 6).
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "uqnn/diagnostics/layerwise.hpp"

namespace uqnn {

/// One line per chain (LPPD_l against l); a marker where eq. 9 first held; dying chains dashed.
void plot_lppd_traces(const std::filesystem::path& path, const std::vector<std::vector<double>>& traces,
                      const std::vector<std::optional<Index>>& converged_at, const std::vector<bool>& dying,
                      const std::string& title);

/// Three panels over the ParamLayout blocks: R-hat^(2) (mean and max), cR-hat^(4) (mean), bulk ESS.
void plot_layer_diagnostics(const std::filesystem::path& path, const std::vector<diagnostics::LayerDiagnostics>& layers,
                            const std::string& title);

/// Nominal vs empirical coverage, one line per named series (e.g. "10 draws"), with the diagonal.
void plot_calibration(const std::filesystem::path& path,
                      const std::vector<std::pair<std::string, std::map<double, double>>>& series,
                      const std::string& title);

/// Seed 003 Fig. 10: histograms of log10 R-hat^(2), one panel per named series (e.g. parameter
/// space per parameter, function space per test point), with the mean and sd in the label.
/// Non-finite values are left out (and counted in the label).
void plot_rhat_histograms(const std::filesystem::path& path, const std::vector<std::pair<std::string, Vec>>& series,
                          const std::string& title);

/// `uqnn diagnose DIR` for a dei-nuts run: reads DIR/dei_chains.json and DIR/draws.csv, redraws
/// DIR/lppd_traces.<ext> and writes DIR/layers.<ext> (per ParamLayout block, grouped from the
/// parameter names), and returns a text table of the chains (kept / dying, RMSE vs the linear
/// model, eq. 9 time, final LPPD) and of the layers. `figure_format` png | svg | none.
std::string diagnose_dei_run(const std::filesystem::path& dir, const std::string& figure_format = "png");

}  // namespace uqnn

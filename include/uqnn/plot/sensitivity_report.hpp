#pragma once
/// @file Files and figures of a sensitivity analysis (seed 000 Figs. 2, 6, 9 and B.14):
/// `sensitivity.csv` (one row per parameter: name, S^2, rank, cumulative ratio),
/// `sensitivity.json` (total variance, N-hat for several tau, per-block sums) and the figures
/// `sensitivity.<ext>` (histogram of S^2 up to its 99th percentile; cumulative variance captured
/// against the number of parameters) and `sensitivity_layers.<ext>` (log10 S^2 of each layer as
/// an [out, in + 1] matrix: weights, then the bias column).
#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "uqnn/hybrid/sensitivity.hpp"

namespace uqnn {

/// The summary written to sensitivity.json (N-hat for each of `taus`).
nlohmann::json sensitivity_summary(const SensitivityReport& report, const ParamLayout& layout,
                                   const std::vector<double>& taus = {0.3, 0.5, 0.75, 0.9, 1.0});

/// Writes the CSV, JSON and (unless figure_format is "none") both figures into `dir`; returns
/// the paths written. `layout` names the network parameters (the model's layout).
std::vector<std::filesystem::path> write_sensitivity_report(const std::filesystem::path& dir, const SensitivityReport& report,
                                                            const ParamLayout& layout, const std::string& figure_format = "png",
                                                            const std::vector<double>& taus = {0.3, 0.5, 0.75, 0.9, 1.0});

}  // namespace uqnn

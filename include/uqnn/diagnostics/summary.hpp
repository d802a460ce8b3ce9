#pragma once
/// @file ArviZ-style posterior summary rows (`az.summary`) with Stan's diagnostics.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "uqnn/core/types.hpp"
#include "uqnn/diagnostics/draws_table.hpp"

namespace uqnn::diagnostics {

/// One row of ArviZ's `az.summary` for a scalar quantity: columns mean, sd, hdi_3%, hdi_97%,
/// mcse_mean, mcse_sd, ess_bulk, ess_tail, r_hat (the HDI column names follow hdi_prob).
/// References: ArviZ `arviz.summary`; Vehtari et al. (2021) for the diagnostics.
struct Summary {
  std::string name;
  double mean = 0.0;       ///< mean of all draws
  double sd = 0.0;         ///< standard deviation of all draws (divisor N - 1)
  double hdi_lower = 0.0;  ///< lower end of the hdi_prob HDI (`hdi_3%` for 0.94)
  double hdi_upper = 0.0;  ///< upper end of the hdi_prob HDI (`hdi_97%` for 0.94)
  double mcse_mean = 0.0;  ///< Monte Carlo standard error of the mean
  double mcse_sd = 0.0;    ///< Monte Carlo standard error of the sd
  double ess_bulk = 0.0;   ///< bulk ESS (rank-normalised split draws)
  double ess_tail = 0.0;   ///< tail ESS (5% and 95% quantile indicators)
  double r_hat = 0.0;      ///< rank-normalised split R-hat, max of bulk and tail (Stan's R-hat)
  double hdi_prob = 0.94;  ///< probability mass of the HDI
};

/// Fewest draws per chain for R-hat, ESS and MCSE (ArviZ's `min_draws`); below it they are NaN.
inline constexpr Index kMinDrawsPerChain = 4;

/// Summary row of the quantity `name` whose draws are `[draws, chains]` (column = chain).
/// With fewer than kMinDrawsPerChain draws per chain, mcse_mean, mcse_sd, ess_bulk, ess_tail and
/// r_hat are NaN, as in ArviZ (mean, sd and the HDI are still given).
/// Throws std::invalid_argument for empty draws or hdi_prob outside (0, 1).
/// References: ArviZ `arviz.summary`; rstan 2.21 `monitor`.
Summary summarize(const std::string& name, const Mat& draws, double hdi_prob = 0.94);

/// One summary row per quantity of `table`, in its column order.
std::vector<Summary> summarize(const DrawsTable& table, double hdi_prob = 0.94);

/// The HDI column names ArviZ uses for hdi_prob, e.g. {"hdi_3%", "hdi_97%"} for 0.94.
std::pair<std::string, std::string> hdi_column_names(double hdi_prob);

/// Aligned text table like the printed `az.summary` DataFrame: a header line, then one line per
/// row; names left-aligned, numbers right-aligned under their column name. ESS values are shown
/// rounded to integers, every other value with `decimals` decimals (ArviZ's round_to, default 2).
/// The HDI column names come from the first row's hdi_prob.
std::string format_summary_table(const std::vector<Summary>& rows, int decimals = 2);

/// JSON array with one object per row: {"name", "mean", "sd", "hdi_3%", "hdi_97%", "mcse_mean",
/// "mcse_sd", "ess_bulk", "ess_tail", "r_hat"}, numbers at full precision (NaN becomes null).
nlohmann::json to_json(const std::vector<Summary>& rows);

}  // namespace uqnn::diagnostics

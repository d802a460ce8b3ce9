#include "uqnn/diagnostics/summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "uqnn/core/error.hpp"
#include "uqnn/diagnostics/ess.hpp"
#include "uqnn/diagnostics/rhat.hpp"
#include "uqnn/diagnostics/statistics.hpp"

namespace uqnn::diagnostics {

Summary summarize(const std::string& name, const Mat& draws, double hdi_prob) {
  require(draws.size() > 0, "draws", "non-empty");
  require(hdi_prob > 0.0 && hdi_prob < 1.0, "hdi_prob", "in (0, 1)");
  Summary row;
  row.name = name;
  row.hdi_prob = hdi_prob;
  row.mean = mean(draws);
  row.sd = sd(draws);
  const Interval interval = hdi(draws, hdi_prob);
  row.hdi_lower = interval.lower;
  row.hdi_upper = interval.upper;
  // ArviZ's rule (`_not_valid(..., min_draws=4)`): with fewer than 4 draws per chain the split
  // pieces hold at most one draw and R-hat, ESS and MCSE are NaN. (posterior computes an R-hat for
  // 2-3 draws only because R drops a one-row matrix to a vector and re-pairs the draws.)
  if (draws.rows() < kMinDrawsPerChain) {
    row.mcse_mean = row.mcse_sd = row.ess_bulk = row.ess_tail = row.r_hat = std::numeric_limits<double>::quiet_NaN();
    return row;
  }
  row.mcse_mean = mcse_mean(draws);
  row.mcse_sd = mcse_sd(draws);
  row.ess_bulk = ess_bulk(draws);
  row.ess_tail = ess_tail(draws);
  row.r_hat = rank_normalized_rhat(draws).max;
  return row;
}

std::vector<Summary> summarize(const DrawsTable& table, double hdi_prob) {
  std::vector<Summary> rows;
  rows.reserve(table.names.size());
  for (std::size_t q = 0; q < table.names.size(); ++q) rows.push_back(summarize(table.names[q], table.draws[q], hdi_prob));
  return rows;
}

std::pair<std::string, std::string> hdi_column_names(double hdi_prob) {
  // ArviZ: f"hdi_{100 * (1 - hdi_prob) / 2:g}%" and f"hdi_{100 * (1 + hdi_prob) / 2:g}%".
  return {fmt::format("hdi_{:g}%", 100.0 * (1.0 - hdi_prob) / 2.0),
          fmt::format("hdi_{:g}%", 100.0 * (1.0 + hdi_prob) / 2.0)};
}

std::string format_summary_table(const std::vector<Summary>& rows, int decimals) {
  require(decimals >= 0 && decimals <= 17, "decimals", "in [0, 17]");
  const auto [hdi_low_name, hdi_high_name] = hdi_column_names(rows.empty() ? 0.94 : rows.front().hdi_prob);
  const std::array<std::string, 9> headers = {"mean",      "sd",      hdi_low_name, hdi_high_name, "mcse_mean",
                                              "mcse_sd",   "ess_bulk", "ess_tail",  "r_hat"};

  // Cells as text first, so every column can be as wide as its widest entry.
  auto number = [&](double value, int places) {
    if (std::isnan(value)) return std::string("nan");
    if (!std::isfinite(value)) return std::string(value > 0 ? "inf" : "-inf");
    // Huge values (a diverged chain) in fixed notation would widen the column to hundreds of digits.
    if (std::abs(value) >= 1e7) return fmt::format("{:.3e}", value);
    return fmt::format("{:.{}f}", value, places);
  };
  std::vector<std::array<std::string, 9>> cells;
  std::size_t name_width = 0;
  for (const Summary& r : rows) {
    cells.push_back({number(r.mean, decimals), number(r.sd, decimals), number(r.hdi_lower, decimals),
                     number(r.hdi_upper, decimals), number(r.mcse_mean, decimals), number(r.mcse_sd, decimals),
                     number(r.ess_bulk, 0), number(r.ess_tail, 0), number(r.r_hat, decimals)});
    name_width = std::max(name_width, r.name.size());
  }
  std::array<std::size_t, 9> width{};
  for (std::size_t c = 0; c < headers.size(); ++c) {
    width[c] = headers[c].size();
    for (const auto& line : cells) width[c] = std::max(width[c], line[c].size());
  }

  std::string out = fmt::format("{:<{}}", "", name_width);
  for (std::size_t c = 0; c < headers.size(); ++c) out += fmt::format("  {:>{}}", headers[c], width[c]);
  out += '\n';
  for (std::size_t i = 0; i < rows.size(); ++i) {
    out += fmt::format("{:<{}}", rows[i].name, name_width);
    for (std::size_t c = 0; c < headers.size(); ++c) out += fmt::format("  {:>{}}", cells[i][c], width[c]);
    out += '\n';
  }
  return out;
}

nlohmann::json to_json(const std::vector<Summary>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const Summary& r : rows) {
    const auto [hdi_low_name, hdi_high_name] = hdi_column_names(r.hdi_prob);
    // nlohmann writes doubles with enough digits to round-trip; NaN is written as null.
    nlohmann::json row;
    row["name"] = r.name;
    row["mean"] = r.mean;
    row["sd"] = r.sd;
    row[hdi_low_name] = r.hdi_lower;
    row[hdi_high_name] = r.hdi_upper;
    row["mcse_mean"] = r.mcse_mean;
    row["mcse_sd"] = r.mcse_sd;
    row["ess_bulk"] = r.ess_bulk;
    row["ess_tail"] = r.ess_tail;
    row["r_hat"] = r.r_hat;
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace uqnn::diagnostics

#include "uqnn/diagnostics/warnings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "uqnn/core/error.hpp"
#include "uqnn/diagnostics/energy.hpp"
#include "uqnn/diagnostics/statistics.hpp"

namespace uqnn::diagnostics {
namespace {

constexpr std::size_t kNamedRows = 3;  // rows named in a message; the rest are counted

/// "lp__ (1.92), f(0.5) (1.31) and 4 more" for rows already sorted worst first.
std::string list_rows(const std::vector<std::pair<std::string, std::string>>& rows) {
  std::string out;
  for (std::size_t i = 0; i < std::min(rows.size(), kNamedRows); ++i)
    out += fmt::format("{}{} ({})", i == 0 ? "" : ", ", rows[i].first, rows[i].second);
  if (rows.size() > kNamedRows) out += fmt::format(" and {} more", rows.size() - kNamedRows);
  return out;
}

double percent(Index part, Index whole) { return 100.0 * static_cast<double>(part) / static_cast<double>(whole); }

}  // namespace

void WarningThresholds::validate() const {
  require(max_rhat >= 1.0 && std::isfinite(max_rhat), "max_rhat", "finite and >= 1");
  require(min_ess_bulk_per_chain >= 0.0 && std::isfinite(min_ess_bulk_per_chain), "min_ess_bulk_per_chain",
          "finite and >= 0");
  require(max_tree_depth_fraction >= 0.0 && max_tree_depth_fraction <= 1.0, "max_tree_depth_fraction", "in [0, 1]");
  require(min_e_bfmi >= 0.0 && std::isfinite(min_e_bfmi), "min_e_bfmi", "finite and >= 0");
}

std::vector<Warning> convergence_warnings(const std::vector<Summary>& rows, Index num_chains,
                                          const SamplerStatsSummary& stats, const WarningThresholds& thresholds) {
  require(num_chains >= 1, "num_chains", ">= 1");
  thresholds.validate();
  std::vector<Warning> out;

  // R-hat (Vehtari et al. 2021, sec. 4.4: use the draws only when R-hat < 1.01).
  std::vector<const Summary*> high_rhat;
  for (const Summary& r : rows)
    if (r.r_hat > thresholds.max_rhat) high_rhat.push_back(&r);  // NaN compares false: not judged
  std::sort(high_rhat.begin(), high_rhat.end(), [](const Summary* a, const Summary* b) { return a->r_hat > b->r_hat; });
  if (!high_rhat.empty()) {
    std::vector<std::pair<std::string, std::string>> named;
    for (const Summary* r : high_rhat) named.emplace_back(r->name, fmt::format("{:.3g}", r->r_hat));
    out.push_back({"rhat", fmt::format("R-hat above {} for {}: the chains have not mixed, so their draws do not yet "
                                       "represent the posterior. Run longer chains (more warmup and draws).",
                                       thresholds.max_rhat, list_rows(named))});
  }

  // Bulk ESS (Vehtari et al. 2021, sec. 4.4: at least 100 per chain for reliable R-hat and MCSE).
  const double min_ess = thresholds.min_ess_bulk_per_chain * static_cast<double>(num_chains);
  std::vector<const Summary*> low_ess;
  for (const Summary& r : rows)
    if (r.ess_bulk < min_ess) low_ess.push_back(&r);
  std::sort(low_ess.begin(), low_ess.end(), [](const Summary* a, const Summary* b) { return a->ess_bulk < b->ess_bulk; });
  if (!low_ess.empty()) {
    std::vector<std::pair<std::string, std::string>> named;
    for (const Summary* r : low_ess) named.emplace_back(r->name, fmt::format("{:.0f}", r->ess_bulk));
    out.push_back({"ess_bulk", fmt::format("Bulk ESS below {:g} per chain ({:g} for {} chain{}) for {}: means, medians and "
                                           "their MCSEs are unreliable. Run more draws.",
                                           thresholds.min_ess_bulk_per_chain, min_ess, num_chains,
                                           num_chains == 1 ? "" : "s", list_rows(named))});
  }

  // Divergences (Stan: any divergence after warmup may bias the draws).
  if (stats.divergences > 0 && stats.num_draws > 0) {
    out.push_back({"divergences",
                   fmt::format("{} of {} draws ({:.1f}%) ended in a divergent transition: the sampler cannot follow the "
                               "posterior's curvature there, and the draws may be biased. {}",
                               stats.divergences, stats.num_draws, percent(stats.divergences, stats.num_draws),
                               stats.divergence_remedy)});
  }

  // Maximum tree depth (Stan warns on any; we on more than a fraction of the draws).
  if (stats.max_depth > 0 && stats.num_draws > 0 &&
      static_cast<double>(stats.draws_at_max_depth) > thresholds.max_tree_depth_fraction * static_cast<double>(stats.num_draws)) {
    out.push_back({"max_tree_depth",
                   fmt::format("{} of {} draws ({:.1f}%, more than {:g}%) reached the maximum tree depth {}: the trajectories "
                               "were cut short, so the sampler explores slowly. Raise --max-depth, or look for a "
                               "badly scaled or strongly correlated posterior.",
                               stats.draws_at_max_depth, stats.num_draws, percent(stats.draws_at_max_depth, stats.num_draws),
                               100.0 * thresholds.max_tree_depth_fraction, stats.max_depth)});
  }

  // E-BFMI (Betancourt 2016: below 0.3 the momentum resampling explores the energy poorly).
  std::vector<std::pair<std::string, std::string>> low_bfmi;
  for (std::size_t c = 0; c < stats.e_bfmi.size(); ++c)
    if (stats.e_bfmi[c] < thresholds.min_e_bfmi) low_bfmi.emplace_back(fmt::format("chain {}", c), fmt::format("{:.2f}", stats.e_bfmi[c]));
  if (!low_bfmi.empty()) {
    out.push_back({"e_bfmi", fmt::format("E-BFMI below {} for {}: the sampler explores the posterior's energy levels "
                                         "poorly and may miss its tails. Reparameterise the model or run longer warmup.",
                                         thresholds.min_e_bfmi, list_rows(low_bfmi))});
  }
  return out;
}

std::vector<Warning> draws_warnings(const DrawsTable& table) {
  std::vector<Warning> out;
  std::vector<std::pair<std::string, std::string>> non_finite, overflowing;
  for (std::size_t q = 0; q < table.names.size(); ++q) {
    const Mat& d = table.draws[q];
    if (d.size() == 0) continue;
    const Index count = d.size() - d.array().isFinite().count();
    if (count > 0) {
      non_finite.emplace_back(table.names[q], fmt::format("{} of {} draws", count, d.size()));
    } else if (!std::isfinite(mean(d)) || (d.size() > 1 && !std::isfinite(sd(d)))) {
      // Finite draws near the largest double (1e308): their sum or squares overflow.
      overflowing.emplace_back(table.names[q], fmt::format("largest |x| {:.3g}", d.cwiseAbs().maxCoeff()));
    }
  }
  if (!non_finite.empty()) {
    out.push_back({"non_finite_draws", fmt::format("NaN or infinite draws in {}: the chains diverged or the file is damaged; "
                                                   "the statistics of these quantities are meaningless.",
                                                   list_rows(non_finite))});
  }
  if (!overflowing.empty()) {
    out.push_back({"overflow", fmt::format("Draws too large for double arithmetic in {}: their mean or variance overflows, "
                                           "so the statistics of these quantities are meaningless. The chains probably "
                                           "diverged; otherwise rescale the quantity.",
                                           list_rows(overflowing))});
  }
  for (Warning& w : few_draws_warnings(table.num_draws())) out.push_back(std::move(w));
  return out;
}

SamplerStatsSummary sampler_stats_summary(const DrawsTable& table, int max_depth) {
  const auto column = [&table](const std::string& name) -> const Mat* {
    const auto it = std::find(table.names.begin(), table.names.end(), name);
    return it == table.names.end() ? nullptr : &table.draws[static_cast<std::size_t>(it - table.names.begin())];
  };
  SamplerStatsSummary s;
  const Mat* divergent = column("divergent__");
  const Mat* depth = column("treedepth__");
  const Mat* energy = column("energy__");
  if (!divergent && !depth && !energy) return s;
  s.num_draws = table.num_draws() * table.num_chains();
  if (divergent) s.divergences = (divergent->array() != 0.0).count();
  if (depth && max_depth > 0) {
    s.max_depth = max_depth;
    s.draws_at_max_depth = (depth->array() >= static_cast<double>(max_depth)).count();
  }
  // E-BFMI needs two finite energies per chain (samplers without a Hamiltonian write NaN).
  if (energy && energy->rows() >= 2 && energy->allFinite()) {
    const Vec b = e_bfmi(*energy);
    s.e_bfmi.assign(b.data(), b.data() + b.size());
  }
  return s;
}

std::vector<Warning> few_draws_warnings(Index draws_per_chain) {
  if (draws_per_chain < 1 || draws_per_chain >= kMinDrawsPerChain) return {};
  return {{"few_draws", fmt::format("{} draw{} per chain: R-hat, ESS and MCSE need at least {} and are reported as NaN "
                                    "(as ArviZ does). Run more draws.",
                                    draws_per_chain, draws_per_chain == 1 ? "" : "s", kMinDrawsPerChain)}};
}

nlohmann::json to_json(const std::vector<Warning>& warnings) {
  nlohmann::json out = nlohmann::json::array();
  for (const Warning& w : warnings) out.push_back({{"code", w.code}, {"message", w.message}});
  return out;
}

std::string format_warnings(const std::vector<Warning>& warnings) {
  std::string out;
  for (const Warning& w : warnings) out += "warning: " + w.message + "\n";
  return out;
}

}  // namespace uqnn::diagnostics

#include "uqnn/diagnostics/warnings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "uqnn/core/error.hpp"
#include "uqnn/diagnostics/energy.hpp"
#include "uqnn/diagnostics/ess.hpp"
#include "uqnn/diagnostics/rhat.hpp"
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

/// The warnings from the sampler's own statistics: divergences, tree depth and E-BFMI.
std::vector<Warning> sampler_warnings(const SamplerStatsSummary& stats, const WarningThresholds& thresholds) {
  std::vector<Warning> out;
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

}  // namespace

void WarningThresholds::validate() const {
  require(max_rhat >= 1.0 && std::isfinite(max_rhat), "max_rhat", "finite and >= 1");
  require(min_ess_bulk_per_chain >= 0.0 && std::isfinite(min_ess_bulk_per_chain), "min_ess_bulk_per_chain",
          "finite and >= 0");
  require(max_tree_depth_fraction >= 0.0 && max_tree_depth_fraction <= 1.0, "max_tree_depth_fraction", "in [0, 1]");
  require(min_e_bfmi >= 0.0 && std::isfinite(min_e_bfmi), "min_e_bfmi", "finite and >= 0");
  require(max_chain_rhat >= 1.0 && std::isfinite(max_chain_rhat), "max_chain_rhat", "finite and >= 1");
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

  for (Warning& w : sampler_warnings(stats, thresholds)) out.push_back(std::move(w));
  return out;
}

ModeAwareConvergence mode_aware_convergence(const std::vector<ChainDraws>& quantities, const SamplerStatsSummary& stats,
                                            const WarningThresholds& thresholds) {
  thresholds.validate();
  constexpr int kPiecesPerChain = 4;                      // cR-hat^(4), the choice of Sommer et al. (2024)
  constexpr Index kMinDraws = 2 * kPiecesPerChain;        // two draws per piece
  ModeAwareConvergence out;
  std::vector<std::pair<std::string, std::string>> drifting, low_ess, between;
  std::vector<Index> bad_chains;
  Index num_chains = 0;
  for (const ChainDraws& q : quantities) {
    num_chains = std::max(num_chains, q.draws.cols());
    if (q.draws.rows() < kMinDraws || !q.draws.allFinite()) continue;  // few_draws / non_finite_draws say why
    double within_ess = 0.0;
    for (Index c = 0; c < q.draws.cols(); ++c) {
      const Vec chain = q.draws.col(c);
      const bool stuck = (chain.array() == chain(0)).all();
      const double chain_rhat = stuck ? 0.0 : rank_normalized_rhat(chain, kPiecesPerChain).max;
      if (stuck || chain_rhat > thresholds.max_chain_rhat) {
        drifting.emplace_back(fmt::format("{} in chain {}", q.name, c),
                              stuck ? std::string("never changes") : fmt::format("{:.3g}", chain_rhat));
        if (std::find(bad_chains.begin(), bad_chains.end(), c) == bad_chains.end()) bad_chains.push_back(c);
      }
      if (!stuck) within_ess += ess_bulk(chain);
    }
    const double min_ess = thresholds.min_ess_bulk_per_chain * static_cast<double>(q.draws.cols());
    if (within_ess < min_ess) low_ess.emplace_back(q.name, fmt::format("{:.0f}", within_ess));
    if (q.draws.cols() >= 2) {
      const double r = rank_normalized_rhat(q.draws, 2).max;
      if (r > thresholds.max_rhat) between.emplace_back(q.name, fmt::format("{:.3g}", r));
    }
  }
  if (!drifting.empty()) {
    std::sort(bad_chains.begin(), bad_chains.end());
    std::string chains;
    for (std::size_t i = 0; i < bad_chains.size(); ++i)
      chains += fmt::format("{}{}", i == 0 ? "" : (i + 1 == bad_chains.size() ? " and " : ", "), bad_chains[i]);
    out.warnings.push_back(
        {"chain_not_converged",
         fmt::format("Chain{} {} {} not converged within {} own mode (chain-wise R-hat above {} or a quantity that never "
                     "changes: {}): {} draws drift, so they do not represent even the mode {} in. Run longer warmup and "
                     "more draws, or leave {} out.",
                     bad_chains.size() == 1 ? "" : "s", chains, bad_chains.size() == 1 ? "has" : "have",
                     bad_chains.size() == 1 ? "its" : "their", thresholds.max_chain_rhat, list_rows(drifting),
                     bad_chains.size() == 1 ? "its" : "their", bad_chains.size() == 1 ? "it is" : "they are",
                     bad_chains.size() == 1 ? "that chain" : "those chains")});
  }
  if (!low_ess.empty()) {
    out.warnings.push_back({"ess_bulk", fmt::format("Bulk ESS within the chains below {:g} per chain ({:g} for {} chain{}) for {}: "
                                                    "means and intervals carry a large Monte Carlo error. Run more draws.",
                                                    thresholds.min_ess_bulk_per_chain,
                                                    thresholds.min_ess_bulk_per_chain * static_cast<double>(num_chains), num_chains,
                                                    num_chains == 1 ? "" : "s", list_rows(low_ess))});
  }
  if (drifting.empty() && !between.empty()) {
    out.notes.push_back({"chains_in_different_modes",
                         fmt::format("the {} chains each converged within their own mode but sit in different modes "
                                     "(between-chain R-hat above {} for {}). A network's posterior has many modes; the draws "
                                     "are a mixture of those the chains found, which is what the predictive averages over. "
                                     "More chains cover more modes.",
                                     num_chains, thresholds.max_rhat, list_rows(between))});
  }
  // A trajectory cut at the maximum tree depth costs efficiency, not validity (Stan's guide to its
  // warnings): when every chain passed the checks above and nothing diverged, it is a note. A
  // network's posterior mixes stiff directions (large weights feeding tanh units) with flat ones
  // set by the prior, so NUTS reaches the depth limit on almost any of them.
  const bool draws_pass = out.warnings.empty();
  std::vector<Warning> sampler = sampler_warnings(stats, thresholds);
  const bool only_depth = std::all_of(sampler.begin(), sampler.end(), [](const Warning& w) { return w.code == "max_tree_depth"; });
  for (Warning& w : sampler) {
    if (w.code == "max_tree_depth" && draws_pass && only_depth) {
      out.notes.push_back({"max_tree_depth",
                           fmt::format("{:.1f}% of the draws reached the maximum tree depth {}: the trajectories were cut "
                                       "short, which costs efficiency, not validity, since the chains passed the convergence "
                                       "checks. A larger --max-depth mixes more per draw at up to twice the cost per level.",
                                       percent(stats.draws_at_max_depth, stats.num_draws), stats.max_depth)});
    } else {
      out.warnings.push_back(std::move(w));
    }
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

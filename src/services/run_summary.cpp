#include "uqnn/services/run_summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "uqnn/core/error.hpp"
#include "uqnn/diagnostics/energy.hpp"

namespace uqnn {

RunSummary summarize_run(const Posterior& post, const Draws& draws, const Mat& probe_inputs, const Standardizer& standardizer,
                         Index worst_k, int max_depth, const std::string& divergence_remedy) {
  require(!draws.empty(), "number of draws", ">= 1");
  RunSummary summary;
  std::vector<diagnostics::ChainDraws> judged;  // lp__, log_lik, f(...): what the run is judged by, not the weights
  const auto add = [&](const std::string& name, const std::vector<double>& values) {
    Mat m = draws.by_chain(values);
    summary.num_chains = m.cols();
    summary.num_draws = m.rows();
    summary.rows.push_back(diagnostics::summarize(name, m));
    judged.push_back({name, std::move(m)});
  };
  const auto S = static_cast<std::size_t>(draws.size());
  std::vector<double> lp = draws.stat_values([](const DrawStats& s) { return s.lp; }), log_lik(S);
  const bool evaluate_lp = lp.empty();  // no sampler statistics: lp__ from the posterior
  if (evaluate_lp) lp.resize(S);
  draws.for_each([&](Index s, const Vec& theta) {
    const auto i = static_cast<std::size_t>(s);
    if (evaluate_lp) lp[i] = post.log_density(theta);
    log_lik[i] = post.log_likelihood(theta, post.inputs(), post.targets());
  });
  add("lp__", lp);
  add("log_lik", log_lik);
  // Function space: the first output's predictive mean at each probe input, in original units.
  const Mat probe_std = standardizer.transform_inputs(probe_inputs);
  const Index P = post.model().num_params();
  std::vector<std::vector<double>> f(static_cast<std::size_t>(probe_inputs.cols()), std::vector<double>(S));
  draws.for_each([&](Index s, const Vec& theta) {
    const Mat mean = post.likelihood().mean(post.model().forward(theta.head(P), probe_std));
    for (Index i = 0; i < probe_inputs.cols(); ++i)
      f[static_cast<std::size_t>(i)][static_cast<std::size_t>(s)] =
          mean(0, i) * (standardizer.target_scale().size() ? standardizer.target_scale()[0] : 1.0) +
          (standardizer.target_mean().size() ? standardizer.target_mean()[0] : 0.0);
  });
  for (Index i = 0; i < probe_inputs.cols(); ++i) {
    // Up to 4 inputs the name is the point; beyond, the probe's number and its first 3 inputs (a
    // 117-input name would fill the table's first column, and those may agree between probes).
    constexpr Index kInputsNamed = 4;
    const Index named = probe_inputs.rows() <= kInputsNamed ? probe_inputs.rows() : kInputsNamed - 1;
    std::string where = probe_inputs.rows() <= kInputsNamed ? "" : fmt::format("#{}: ", i + 1);
    for (Index d = 0; d < named; ++d) where += (d ? "," : "") + fmt::format("{:.3g}", probe_inputs(d, i));
    if (named < probe_inputs.rows()) where += ",...";
    add("f(" + where + ")", f[static_cast<std::size_t>(i)]);
  }
  // Weight space: every coordinate's R-hat, keep the worst k. Coordinates with the same value in
  // every draw (vi-hmc's parameters fixed at the VI means, seed 000) have no R-hat (sd 0: NaN,
  // which would sort first and fill the list): they are counted, not listed.
  std::vector<diagnostics::Summary> weights;
  for (Index k = 0; k < post.dim(); ++k) {
    const double value = draws.chain(0).values(0, k);
    if (std::all_of(draws.chains().begin(), draws.chains().end(),
                    [&](const DrawChain& chain) { return (chain.values.col(k).array() == value).all(); })) {
      ++summary.num_constant_weights;
      continue;
    }
    weights.push_back(diagnostics::summarize(post.layout().name_of(k), draws.parameter_by_chain(k)));
  }
  std::sort(weights.begin(), weights.end(), [](const auto& a, const auto& b) {
    const double ra = std::isfinite(a.r_hat) ? a.r_hat : 1e300, rb = std::isfinite(b.r_hat) ? b.r_hat : 1e300;
    return ra > rb;
  });
  if (!weights.empty()) summary.max_weight_rhat = weights.front().r_hat;
  for (Index k = 0; k < std::min<Index>(worst_k, static_cast<Index>(weights.size())); ++k)
    summary.rows.push_back(weights[static_cast<std::size_t>(k)]);
  // Footer: divergences, tree depth and E-BFMI.
  std::vector<double> energy;
  summary.max_depth = max_depth;
  for (const DrawChain& chain : draws.chains())
    for (const DrawStats& st : chain.stats) {
      summary.divergences += st.is_divergent ? 1 : 0;
      summary.draws_at_max_depth += max_depth > 0 && st.tree_depth >= max_depth ? 1 : 0;
      energy.push_back(st.energy);
    }
  if (!energy.empty() && std::all_of(energy.begin(), energy.end(), [](double e) { return std::isfinite(e); })) {
    const Mat by_chain_energy = draws.by_chain(energy);
    if (by_chain_energy.rows() >= 2) {  // E-BFMI needs two draws per chain
      const Vec b = diagnostics::e_bfmi(by_chain_energy);
      summary.e_bfmi.assign(b.data(), b.data() + b.size());
    }
  }
  diagnostics::SamplerStatsSummary sampler;
  sampler.num_draws = draws.has_stats() ? draws.size() : 0;
  sampler.divergences = summary.divergences;
  sampler.max_depth = max_depth;
  sampler.draws_at_max_depth = summary.draws_at_max_depth;
  sampler.e_bfmi = summary.e_bfmi;
  if (!divergence_remedy.empty()) sampler.divergence_remedy = divergence_remedy;
  summary.warnings = diagnostics::few_draws_warnings(summary.num_draws);
  // Within each chain's mode, and between the chains apart: a network's chains in different modes
  // are a property of its posterior, not a failure (diagnostics/warnings.hpp).
  diagnostics::ModeAwareConvergence judgement = diagnostics::mode_aware_convergence(judged, sampler);
  for (auto& w : judgement.warnings) summary.warnings.push_back(std::move(w));
  summary.notes = std::move(judgement.notes);
  return summary;
}

nlohmann::json RunSummary::to_json() const {
  return {{"rows", diagnostics::to_json(rows)}, {"num_chains", num_chains}, {"num_draws", num_draws},
          {"divergences", divergences},         {"e_bfmi", e_bfmi},         {"max_weight_rhat", max_weight_rhat},
          {"num_constant_weights", num_constant_weights}, {"max_depth", max_depth},
          {"draws_at_max_depth", draws_at_max_depth}, {"warnings", diagnostics::to_json(warnings)},
          {"notes", diagnostics::to_json(notes)}};
}

std::string RunSummary::format(int decimals) const {
  std::string out = diagnostics::format_summary_table(rows, decimals);
  out += fmt::format("{} chains x {} draws; divergences: {}; max weight R-hat: {:.3f}", num_chains, num_draws, divergences,
                     max_weight_rhat);
  if (num_constant_weights > 0)
    out += fmt::format("; {} weights constant in every draw (fixed, e.g. vi-hmc's unsampled parameters) not ranked", num_constant_weights);
  if (max_depth > 0) out += fmt::format("; at max tree depth {}: {} draws", max_depth, draws_at_max_depth);
  if (!e_bfmi.empty()) {
    out += "; E-BFMI per chain:";
    for (double b : e_bfmi) out += fmt::format(" {:.2f}", b);
    out += " (below 0.3 suggests poor exploration)";
  }
  return out + "\n";
}

}  // namespace uqnn

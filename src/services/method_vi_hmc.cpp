// `uqnn fit --method vi-hmc` (seed 000, Algorithm 2) and `uqnn sensitivity`: Bayes by Backprop with
// the fit's VI settings, sensitivities S_i^2 (eq. 17) on the training inputs, written as a report
// (sensitivity.csv/.json and figures), then HMC or NUTS on the N-hat most sensitive parameters with
// the rest at their VI means. Options: vi-hmc's own (ViHmcOptions below), the VI ones, the chains
// (chains, warmup as burn-in, draws, thin) and the step size.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <numeric>

#include "approx_common.hpp"
#include "sampler_options.hpp"
#include "uqnn/core/communicator.hpp"
#include "uqnn/plot/sensitivity_report.hpp"
#include "uqnn/hybrid/vi_hmc.hpp"
#include "uqnn/run/observer.hpp"

namespace uqnn {

namespace {

/// vi-hmc's own settings: ViHmcParams (the library's defaults) and the sensitivity-only switch of
/// `uqnn sensitivity`.
struct ViHmcOptions {
  ViHmcParams params;
  bool sensitivity_only = false;
};

const OptionSchema<ViHmcOptions>& vi_hmc_options() {
  using O = ViHmcOptions;
  static const auto s =
      OptionSchema<O>("vi_hmc", "VI-HMC")
          .add_nested("tau", [](O& o) -> double& { return o.params.tau; },
                      "proportion of the first-order output variance kept (eq. 18)")
          .above(0)
          .at_most(1)
          .cite("Thiagarajan et al., eq. 18")
          .add_nested("sampler", [](O& o) -> std::string& { return o.params.sampler; }, "kernel on the sensitive subset")
          .one_of({"hmc", "nuts"})
          .add_choice("subset", [](O& o) -> SubsetRule& { return o.params.subset; },
                      {{"sensitive", SubsetRule::Sensitive}, {"random", SubsetRule::Random}},
                      "sensitive (the method) | random (same size, the control of Appendix E)")
          .add_choice("path_length", [](O& o) -> bool& { return o.params.paper_path_length; }, {{"paper", true}, {"fixed", false}},
                      "hmc: paper (L = pi s / (2 eps), Appendix C) | fixed (--num-steps)")
          .add_choice("spread", [](O& o) -> SpreadStatistic& { return o.params.spread_statistic; },
                      {{"max", SpreadStatistic::Max}, {"median", SpreadStatistic::Median}},
                      "s = max | median of the VI spreads of the sampled parameters")
          .add_choice("spread_measure", [](O& o) -> SpreadMeasure& { return o.params.spread_measure; },
                      {{"sd", SpreadMeasure::StandardDeviation}, {"variance", SpreadMeasure::Variance}},
                      "sd (quarter period of the harmonic flow) | variance (the paper's code)")
          .add_nested("init_spread", [](O& o) -> double& { return o.params.init_spread; },
                      "chains start at mu + k sigma N(0, 1) of the VI posterior (0 = at the means)")
          .at_least(0)
          .add_nested("max_leapfrog_steps", [](O& o) -> int& { return o.params.max_leapfrog_steps; }, "cap of the path-length rule")
          .at_least(1)
          .add_nested("num_steps", [](O& o) -> int& { return o.params.num_leapfrog_steps; },
                      "hmc leapfrog steps L with --path-length fixed, and while finding the step size")
          .at_least(1)
          .add_nested("max_depth", [](O& o) -> int& { return o.params.nuts_max_depth; }, "nuts maximum tree depth")
          .at_least(1)
          .at_most(30)
          .add_nested("target_accept", [](O& o) -> double& { return o.params.target_accept; },
                      "target acceptance when the step size is found (--step-size unset)")
          .above(0)
          .below(1)
          .add_nested("jitter", [](O& o) -> double& { return o.params.step_size_jitter; }, "hmc step-size jitter fraction")
          .at_least(0)
          .below(1)
          .add("sensitivity_only", &O::sensitivity_only, "stop after VI and the sensitivities (what `uqnn sensitivity` runs)");
  return s;
}

/// The vi-hmc settings; the step size from the shared step options.
ViHmcOptions vi_hmc_settings(const FitContext& c) {
  ViHmcOptions o = vi_hmc_options().read(c.config.method_settings);
  const detail::StepOptions step = detail::step_options().read(c.config.method_settings);
  if (!step.adapt && !step.step_size) throw InputError("--step-size is required when adaptation is off (--no-adapt)");
  o.params.step_size = step.step_size.value_or(0.0);
  o.params.subset_seed = c.config.seed;
  try {
    o.params.validate();
  } catch (const std::invalid_argument& e) {
    throw InputError(e.what());
  }
  return o;
}

}  // namespace

MethodResult run_vi_hmc_method(const FitContext& c) {
  const ViHmcOptions options = vi_hmc_settings(c);
  const ViHmcParams& params = options.params;
  const auto& post = c.posterior;
  const Index P = post->model().num_params();
  std::shared_ptr<const Prior> prior;
  const ViResult vi = detail::fit_vi(c, prior, /*default_lr_decay=*/1.0);  // seed 000's constant rate
  const Vec vi_sd = vi.approximation->sd();
  SensitivityReport report = compute_sensitivities(post->model(), vi.mu.head(P), vi_sd.head(P), post->inputs());
  std::vector<double> taus{0.3, 0.5, 0.75, 0.9, 1.0};
  if (std::find(taus.begin(), taus.end(), params.tau) == taus.end()) taus.push_back(params.tau);
  if (world_communicator()->is_root())  // rank 0 alone writes files (MPI)
    write_sensitivity_report(c.config.out_dir, report, post->model().layout(), c.config.figure_format, taus);
  c.log(fmt::format("vi-hmc: sensitivities written (sensitivity.json); tau = {} keeps {} of {} network parameters",
                    params.tau, report.num_kept(params.tau), P));

  MethodResult r;
  std::vector<double> negative;
  for (double e : vi.elbo) negative.push_back(-e);
  r.history = {{"-ELBO (VI stage)", negative}};
  r.history_label = "-ELBO";
  r.info = {{"vi_final_elbo", vi.elbo.back()},
            {"vi_prior", prior->to_json()},
            {"tau", params.tau},
            {"num_kept", report.num_kept(params.tau)},
            {"num_network_params", P},
            {"sensitivity_total_variance", report.total}};
  if (options.sensitivity_only) {
    Rng sampler(c.config.seed, 1);
    r.draws = Draws::independent(vi.approximation->sample(sampler, detail::num_samples(c)));
    r.info["draws_from"] = "vi";
    return r;
  }

  const detail::ChainOptions m = detail::chain_options().read(c.config.method_settings);
  const detail::ChainRunObservers observers(c);
  const ViHmcResult result =
      run_vi_hmc(post, vi.mu, vi_sd, std::move(report), params, detail::chain_run_config(c.config, m), observers.list());
  const RunResult& rr = result.run;
  const Index kept = rr.min_draws();
  r.draws = detail::kept_draws(rr, [&result](const Vec& x) { return result.view->expand(x); });
  const std::vector<double> n_leapfrog = r.draws.stat_values([](const DrawStats& s) { return s.n_leapfrog; });
  const double leapfrogs = std::accumulate(n_leapfrog.begin(), n_leapfrog.end(), 0.0);
  const double iterations = static_cast<double>(rr.num_chains()) * static_cast<double>(m.warmup + m.draws);
  r.info.update({{"sampler", params.sampler},
                 {"subset", params.subset == SubsetRule::Sensitive ? "sensitive" : "random"},
                 {"num_sampled", result.active.size()},
                 {"step_size", result.step_size},
                 {"step_size_found", params.step_size == 0.0},
                 {"num_leapfrog_steps", result.num_leapfrog_steps},
                 {"path_length_rule", params.paper_path_length ? (params.spread_measure == SpreadMeasure::Variance ? "pi*variance/(2 eps)" : "pi*sd/(2 eps)") : "fixed"},
                 {"chains", rr.num_chains()},
                 {"warmup", m.warmup},
                 {"draws_per_chain", kept},
                 {"divergences", rr.num_divergent()},
                 {"mean_accept_stat", detail::mean_accept_prob(r.draws)},
                 {"mean_leapfrog_per_draw", r.draws.empty() ? 0.0 : leapfrogs / static_cast<double>(r.draws.size())},
                 {"sampling_seconds", rr.seconds},
                 {"seconds_per_iteration", iterations > 0 ? rr.seconds / iterations : 0.0},
                 {"find_step_size_seconds", result.find_step_size_seconds},
                 {"subspace_gradient", result.view->uses_subspace_gradient()},
                 {"interrupted", rr.interrupted}});
  if (c.config.resume) r.info["resumed_at_iteration"] = rr.resumed_at;  // per chain; 0: started afresh
  return r;
}

}  // namespace uqnn

namespace uqnn {
namespace {
const bool registered_vi_hmc = register_method({
    .name = "vi-hmc",
    .summary = "VI, sensitivities S_i^2, then HMC or NUTS on the sensitive subset",
    .reference = "Thiagarajan et al., Algorithm 2",
    .family = MethodFamily::Hybrid,
    .groups = {&detail::chain_options().group(), &detail::step_options().group(), &detail::samples_options().group(),
               &detail::vi_options().group(), &vi_hmc_options().group()},
    .run = &run_vi_hmc_method,
    .kept_draws = &detail::chain_kept_draws,
    .sampler_traits = [](const nlohmann::json& settings) {
      const ViHmcOptions o = vi_hmc_options().read(settings);
      SamplerTraits traits;
      if (o.params.sampler == "nuts") traits.max_tree_depth = o.params.nuts_max_depth;
      if (!detail::step_options().read(settings).adapt) traits.divergence_advice = detail::kLowerTheStepSize;
      return traits;
    },
    // At the default target 0.8, 3% of the transitions diverged.
    .demo_preset = {{"target_accept", 0.95}, {"warmup", 2000}, {"draws", 2000}}});
}  // namespace
}  // namespace uqnn

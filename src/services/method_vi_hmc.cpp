// `uqnn fit --method vi-hmc` (seed 000, Algorithm 2) and `uqnn sensitivity`: Bayes by Backprop with
// the fit's VI settings, sensitivities S_i^2 (eq. 17) on the training inputs, written as a report
// (sensitivity.csv/.json and figures), then HMC or NUTS on the N-hat most sensitive parameters with
// the rest at their VI means. Settings travel in FitConfig::method_options (ViHmcOptions below);
// chains, warmup (burn-in), draws, --step-size, --num-steps, --target-accept and --max-depth come
// from the MCMC settings.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "approx_common.hpp"
#include "chain_run.hpp"
#include "uqnn/hybrid/sensitivity_report.hpp"
#include "uqnn/hybrid/vi_hmc.hpp"
#include "uqnn/run/observer.hpp"

namespace uqnn {

namespace {

/// The vi-hmc settings from method_options (keys = the CLI flags without "--", '-' as '_').
ViHmcParams vi_hmc_params(const FitContext& c, bool& sensitivity_only) {
  const nlohmann::json& j = c.config.method_options;
  const McmcConfig& m = c.config.mcmc;
  ViHmcParams p;
  try {
    p.tau = j.value("tau", p.tau);
    p.sampler = j.value("sampler", p.sampler);
    const std::string subset = j.value("subset", std::string("sensitive"));
    if (subset == "sensitive") p.subset = SubsetRule::Sensitive;
    else if (subset == "random") p.subset = SubsetRule::Random;
    else throw InputError("--subset '" + subset + "' is not known: valid are sensitive, random");
    p.subset_seed = c.config.seed;
    const std::string path = j.value("path_length", std::string("paper"));
    if (path != "paper" && path != "fixed") throw InputError("--path-length '" + path + "' is not known: valid are paper, fixed");
    p.paper_path_length = path == "paper";
    const std::string spread = j.value("spread", std::string("max"));
    if (spread == "max") p.spread_statistic = SpreadStatistic::Max;
    else if (spread == "median") p.spread_statistic = SpreadStatistic::Median;
    else throw InputError("--spread '" + spread + "' is not known: valid are max, median");
    const std::string measure = j.value("spread_measure", std::string("sd"));
    if (measure == "sd") p.spread_measure = SpreadMeasure::StandardDeviation;
    else if (measure == "variance") p.spread_measure = SpreadMeasure::Variance;
    else throw InputError("--spread-measure '" + measure + "' is not known: valid are sd, variance");
    p.init_spread = j.value("init_spread", p.init_spread);
    p.max_leapfrog_steps = j.value("max_leapfrog_steps", p.max_leapfrog_steps);
    sensitivity_only = j.value("sensitivity_only", false);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(std::string("vi-hmc options: ") + e.what());
  }
  if (m.step_size < 0) throw InputError(fmt::format("--step-size {} is invalid: it must be >= 0 (0 = find it)", m.step_size));
  if (!m.adapt && m.step_size == 0) throw InputError("--step-size is required when adaptation is off (--no-adapt)");
  p.step_size = m.step_size;
  p.num_leapfrog_steps = m.num_steps;
  p.target_accept = m.target_accept;
  p.nuts_max_depth = m.max_depth;
  p.step_size_jitter = m.jitter;
  try {
    p.validate();
  } catch (const std::invalid_argument& e) {
    throw InputError(e.what());
  }
  return p;
}

}  // namespace

MethodResult run_vi_hmc(const FitContext& c) {
  bool sensitivity_only = false;
  const ViHmcParams params = vi_hmc_params(c, sensitivity_only);
  const auto& post = c.posterior;
  const Index P = post->model().num_params();
  std::shared_ptr<const Prior> prior;
  const ViResult vi = detail::fit_vi(c, prior);
  const Vec vi_sd = vi.approximation->sd();
  SensitivityReport report = compute_sensitivities(post->model(), vi.mu.head(P), vi_sd.head(P), post->inputs());
  std::vector<double> taus{0.3, 0.5, 0.75, 0.9, 1.0};
  if (std::find(taus.begin(), taus.end(), params.tau) == taus.end()) taus.push_back(params.tau);
  write_sensitivity_report(c.config.out_dir, report, post->model().layout(), c.config.figure_format, taus);
  c.log(fmt::format("vi-hmc: sensitivities written to {}; tau = {} keeps {} of {} network parameters",
                    c.config.out_dir.string(), params.tau, report.num_kept(params.tau), P));

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
  if (sensitivity_only) {
    const ApproxOptions o = detail::approx_options(c);
    detail::check_samples(o);
    Rng sampler(c.config.seed, 1);
    r.draws = vi.approximation->sample(sampler, o.num_samples);
    r.info["draws_from"] = "vi";
    return r;
  }

  const McmcConfig& m = c.config.mcmc;
  const detail::ChainRunObservers observers(c.config);
  const ViHmcResult result =
      run_vi_hmc(post, vi.mu, vi_sd, std::move(report), params, detail::chain_run_config(c.config), observers.list());
  const RunResult& rr = result.run;
  const Index kept = rr.min_draws();
  detail::append_kept_draws(rr, r, [&result](const Vec& x) { return result.view->expand(x); });
  long leapfrogs = 0;
  for (const DrawStats& s : r.stats) leapfrogs += s.n_leapfrog;
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
                 {"mean_accept_stat", detail::mean_accept_stat(r.stats)},
                 {"mean_leapfrog_per_draw", r.stats.empty() ? 0.0 : static_cast<double>(leapfrogs) / static_cast<double>(r.stats.size())},
                 {"sampling_seconds", rr.seconds},
                 {"seconds_per_iteration", iterations > 0 ? rr.seconds / iterations : 0.0},
                 {"find_step_size_seconds", result.find_step_size_seconds},
                 {"subspace_gradient", result.view->uses_subspace_gradient()},
                 {"interrupted", rr.interrupted}});
  return r;
}

}  // namespace uqnn

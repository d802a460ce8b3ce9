// `uqnn fit --method amcmc|hmc|mala|nuts|sgld|sghmc|psgld|fsgld|fsghmc`: gradient-based and adaptive-Metropolis MCMC through the
// multi-chain driver. Chains start from their own MAP fit (QUiNN's zflag), a network initialisation
// or a prior draw; every chain uses Rng(seed, chain), so draws do not depend on the thread count.
#include <fmt/format.h>

#include <cmath>

#include "chain_run.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/mcmc/chain_samplers.hpp"
#include "uqnn/mcmc/sgmcmc/psgld.hpp"
#include "uqnn/mcmc/sgmcmc/sghmc.hpp"
#include "uqnn/mcmc/sgmcmc/sgld.hpp"
#include "uqnn/run/run_chains.hpp"
#include "uqnn/services/functional_options.hpp"
#include "uqnn/services/methods.hpp"

namespace uqnn {

namespace {

MetricAdaptation metric_adaptation(const McmcConfig& m) {
  if (!m.adapt || m.metric == "unit") return MetricAdaptation::None;
  if (m.metric == "diag") return MetricAdaptation::Diagonal;
  if (m.metric == "dense") return MetricAdaptation::Dense;
  throw InputError("--metric '" + m.metric + "' is not known: valid are diag, dense, unit");
}

double initial_step_size(const McmcConfig& m) {
  if (m.step_size > 0) return m.step_size;
  if (!m.adapt) throw InputError("--step-size is required when adaptation is off (--no-adapt)");
  return 0.1;  // replaced by Stan's heuristic at the start of warmup
}

sgmcmc::StepSizeSchedule schedule(const McmcConfig& m) {
  if (m.step_size <= 0) throw InputError("--step-size is required (> 0) for stochastic-gradient MCMC");
  if (m.schedule == "constant") return sgmcmc::StepSizeSchedule::constant(m.step_size);
  if (m.schedule == "polynomial") return sgmcmc::StepSizeSchedule::polynomial(m.step_size, m.schedule_b, m.schedule_gamma);
  if (m.schedule == "step") return sgmcmc::StepSizeSchedule::step_decay(m.step_size, m.decay, m.decay_every);
  throw InputError("--schedule '" + m.schedule + "' is not known: valid are constant, polynomial, step");
}

/// Stochastic-gradient samplers: warmup is burn-in (no adaptation), lp__ is the exact full-data
/// log density every 10th transition (NaN otherwise) when the data are minibatched.
SamplerFactory sgmcmc_factory(const std::string& method, const McmcConfig& m, std::shared_ptr<const LogDensity> density) {
  const Index lp_every = m.batch_size > 0 ? 10 : 0;
  if (method == "sgld") {
    sgmcmc::SgldParams p;
    p.schedule = schedule(m);
    p.batch_size = m.batch_size;
    p.lp_every = lp_every;
    p.validate();
    return [density, p]() { return std::make_unique<sgmcmc::SgldSampler>(density, p); };
  }
  if (method == "sghmc") {
    sgmcmc::SghmcParams p;
    p.schedule = schedule(m);
    p.friction = m.friction;
    p.num_steps = m.sghmc_steps;
    p.resample_momentum = m.resample_momentum;
    p.batch_size = m.batch_size;
    p.lp_every = lp_every;
    p.validate();
    return [density, p]() { return std::make_unique<sgmcmc::SghmcSampler>(density, p); };
  }
  sgmcmc::PsgldParams p;
  p.schedule = schedule(m);
  p.alpha = m.psgld_alpha;
  p.lambda = m.psgld_lambda;
  p.batch_size = m.batch_size;
  p.lp_every = lp_every;
  p.validate();
  return [density, p]() { return std::make_unique<sgmcmc::PsgldSampler>(density, p); };
}

SamplerConfig sampler_config(const std::string& method, const McmcConfig& m, Index dim) {
  StanWarmupParams warmup;
  warmup.adapt_step_size = m.adapt;
  warmup.metric = metric_adaptation(m);
  warmup.dual_averaging.target_accept = m.target_accept;
  if (method == "nuts") {
    NutsConfig c;
    c.kernel.step_size = initial_step_size(m);
    c.kernel.max_tree_depth = m.max_depth;
    c.kernel.step_size_jitter = m.jitter;
    c.kernel.metric = make_unit_metric(dim);
    c.warmup = warmup;
    return c;
  }
  if (method == "hmc") {
    HmcConfig c;
    c.kernel.step_size = initial_step_size(m);
    c.kernel.num_leapfrog_steps = m.num_steps;
    c.kernel.step_size_jitter = m.jitter;
    c.kernel.metric = make_unit_metric(dim);
    c.warmup = warmup;
    return c;
  }
  if (method == "mala") {
    MalaConfig c;
    c.kernel.step_size = initial_step_size(m);
    c.adapt_step_size = m.adapt;
    return c;
  }
  AdaptiveMetropolisConfig c;
  c.kernel.gamma = m.am_gamma;
  c.kernel.t0 = m.am_t0;
  c.kernel.t_adapt = m.am_t_adapt;
  return c;
}

MethodResult run_mcmc(const FitContext& context, const std::string& method) {
  const auto& cfg = context.config;
  const McmcConfig& m = cfg.mcmc;
  const auto& post = context.posterior;
  RunConfig run = detail::chain_run_config(cfg);
  run.validate();

  InitialPoints initial;
  if (m.init == "map") {
    // Each chain from its own MAP fit from its own initialisation (chain c uses Rng(seed, c)).
    initial = InitialPointFn([&context, post](int chain, Rng& rng) {
      (void)chain;
      return train_map(context, post->initial_point(rng), rng).best_theta;
    });
  } else if (m.init == "random") {
    initial = InitialPointFn([post](int, Rng& rng) { return post->initial_point(rng); });
  } else if (m.init == "prior") {
    initial = InitialPointFn([post](int, Rng& rng) { return post->sample_prior(rng); });
  } else {
    throw InputError("--chain-init '" + m.init + "' is not known: valid are map, random, prior");
  }

  // fSGLD / fSGHMC (seed 002): SGLD / SGHMC on the functional posterior (GP prior at measurement points).
  const bool functional = method == "fsgld" || method == "fsghmc";
  nlohmann::json functional_info;
  std::shared_ptr<const LogDensity> target = post;
  if (functional) target = build_functional_posterior(context, &functional_info);
  const std::string kernel = functional ? method.substr(1) : method;
  const bool stochastic = kernel == "sgld" || kernel == "sghmc" || kernel == "psgld";
  const SamplerFactory factory = stochastic ? sgmcmc_factory(kernel, m, target)
                                            : make_sampler_factory(post, sampler_config(method, m, post->dim()));
  const detail::ChainRunObservers observers(cfg);
  context.log(fmt::format("{}: {} chains x ({} warmup + {} draws), init {}", method, m.chains, m.warmup, m.draws, m.init));
  const RunResult r = run_chains(run, factory, initial, observers.list());

  MethodResult result;
  detail::append_kept_draws(r, result);
  result.info = {{"sampler", method},
                 {"chains", r.num_chains()},
                 {"warmup", m.warmup},
                 {"draws_per_chain", r.min_draws()},
                 {"thin", m.thin},
                 {"init", m.init},
                 {"divergences", r.num_divergent()},
                 {"divergences_warmup", r.num_divergent_warmup()},
                 {"mean_accept_stat", detail::mean_accept_stat(result.stats)},
                 {"interrupted", r.interrupted},
                 {"sampling_seconds", r.seconds},
                 {"tuned", r.sampler_descriptions}};
  if (functional) result.info["functional_prior"] = functional_info;
  if (r.interrupted) context.log("interrupted: keeping the draws made so far");
  return result;
}

}  // namespace

MethodResult run_nuts(const FitContext& c) { return run_mcmc(c, "nuts"); }
MethodResult run_hmc(const FitContext& c) { return run_mcmc(c, "hmc"); }
MethodResult run_mala(const FitContext& c) { return run_mcmc(c, "mala"); }
MethodResult run_amcmc(const FitContext& c) { return run_mcmc(c, "amcmc"); }
MethodResult run_sgld(const FitContext& c) { return run_mcmc(c, "sgld"); }
MethodResult run_sghmc(const FitContext& c) { return run_mcmc(c, "sghmc"); }
MethodResult run_psgld(const FitContext& c) { return run_mcmc(c, "psgld"); }
MethodResult run_fsgld(const FitContext& c) { return run_mcmc(c, "fsgld"); }
MethodResult run_fsghmc(const FitContext& c) { return run_mcmc(c, "fsghmc"); }

}  // namespace uqnn

// `uqnn fit --method sgld|sghmc|psgld|fsgld|fsghmc`: stochastic-gradient MCMC (SGLD, Welling & Teh
// 2011; SGHMC, Chen et al. 2014; pSGLD, Li et al. 2016) and its functional versions of seed 002
// (a GP prior over the network's outputs at measurement points, Algorithms 1-2). Warmup is burn-in
// (no adaptation); with minibatches lp__ is the exact full-data log density every 10th transition.
// --lockstep (sgld, sghmc, psgld) batches the chains' minibatch gradients, one chain per SIMD lane
// (run/lockstep.hpp); the functional versions draw measurement points at every gradient and do not take it.
#include <fmt/format.h>

#include "sampler_options.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/mcmc/sgmcmc/psgld.hpp"
#include "uqnn/mcmc/sgmcmc/sghmc.hpp"
#include "uqnn/mcmc/sgmcmc/sgld.hpp"
#include "uqnn/services/functional_options.hpp"

namespace uqnn {

namespace {

/// Step-size schedule and minibatch of every SG-MCMC method.
struct SgOptions {
  std::optional<double> step_size;  ///< required: SG-MCMC has no automatic step size
  Index sg_batch_size = 0;
  Index sg_lp_every = 10;  ///< with minibatches: transitions between exact full-data lp__ values
  std::string schedule = "constant";
  double schedule_b = 1.0, schedule_gamma = 0.55;
  double decay = 0.9;
  Index decay_every = 5000;
};

const OptionSchema<SgOptions>& sg_options() {
  static const auto s =
      OptionSchema<SgOptions>("sgmcmc", "Stochastic-gradient MCMC")
          .add("step_size", &SgOptions::step_size, "step size a (required: SG-MCMC has no automatic step size)")
          .above(0)
          .add("sg_batch_size", &SgOptions::sg_batch_size, "minibatch size; 0 = full batch")
          .at_least(0)
          .add("sg_lp_every", &SgOptions::sg_lp_every,
               "with minibatches: the exact full-data lp__ on every k-th kept draw (one pass over the data each), NaN on the "
               "other draws and in burn-in; 0 = the free minibatch estimate on every transition")
          .at_least(0)
          .add("schedule", &SgOptions::schedule, "step size: constant | polynomial a (b + t)^-gamma | step (decay every k)")
          .one_of({"constant", "polynomial", "step"})
          .cite("Welling & Teh 2011, sec. 3 (polynomial)")
          .add("schedule_b", &SgOptions::schedule_b, "polynomial schedule b")
          .above(0)
          .add("schedule_gamma", &SgOptions::schedule_gamma, "polynomial schedule gamma")
          .above(0)
          .at_most(1)
          .add("decay", &SgOptions::decay, "step schedule: factor")
          .above(0)
          .at_most(1)
          .add("decay_every", &SgOptions::decay_every, "step schedule: iterations between decays")
          .at_least(1);
  return s;
}

/// SGHMC's friction and steps (seed 002 Algorithm 2).
struct SghmcOptions {
  double friction = 0.1;
  Index sghmc_steps = 1;
  bool resample_momentum = false;
};

const OptionSchema<SghmcOptions>& sghmc_options() {
  static const auto s =
      OptionSchema<SghmcOptions>("sghmc", "SGHMC")
          .add("friction", &SghmcOptions::friction, "friction C")
          .above(0)
          .cite("Chen et al. 2014, eq. 15")
          .add("sghmc_steps", &SghmcOptions::sghmc_steps, "gradient steps per draw (m of Wu et al. Algorithm 2)")
          .at_least(1)
          .add("resample_momentum", &SghmcOptions::resample_momentum, "redraw the momentum before each draw's steps (Wu et al. Algorithm 2)");
  return s;
}

const OptionSchema<sgmcmc::PsgldParams>& psgld_options() {
  using P = sgmcmc::PsgldParams;
  static const auto s = OptionSchema<P>("psgld", "pSGLD (RMSprop preconditioner)")
                            .add("psgld_alpha", &P::alpha, "RMSprop decay alpha")
                            .above(0)
                            .below(1)
                            .cite("Li et al. 2016, Algorithm 1")
                            .add("psgld_lambda", &P::lambda, "regulariser lambda")
                            .above(0);
  return s;
}

sgmcmc::StepSizeSchedule schedule(const SgOptions& o) {
  if (!o.step_size) throw InputError("--step-size is required (> 0) for stochastic-gradient MCMC");
  if (o.schedule == "polynomial") return sgmcmc::StepSizeSchedule::polynomial(*o.step_size, o.schedule_b, o.schedule_gamma);
  if (o.schedule == "step") return sgmcmc::StepSizeSchedule::step_decay(*o.step_size, o.decay, o.decay_every);
  return sgmcmc::StepSizeSchedule::constant(*o.step_size);
}

/// The SG-MCMC kernel on `target` (the posterior, or the functional posterior of seed 002).
template <typename Params, typename Sampler>
SamplerFactory sg_factory(const FitContext& context, std::shared_ptr<const LogDensity> target, Params p) {
  target = detail::lockstep_density(std::move(target), context.config.method_settings);
  const SgOptions o = sg_options().read(context.config.method_settings);
  p.schedule = schedule(o);
  p.batch_size = o.sg_batch_size;
  // The exact lp__ (a pass over all the data) on every sg_lp_every-th kept draw only: the run keeps
  // iterations warmup, warmup + thin, ... (0-based), i.e. transitions warmup + 1 + k thin.
  const auto chains = detail::chain_options().read(context.config.method_settings);
  p.lp_every = o.sg_batch_size > 0 ? o.sg_lp_every * chains.thin : 0;
  p.lp_first = static_cast<Index>(chains.warmup) + 1;
  p.validate();
  return [target, p]() { return std::make_unique<Sampler>(target, p); };
}

sgmcmc::SghmcParams sghmc_params(const FitContext& context) {
  const SghmcOptions o = sghmc_options().read(context.config.method_settings);
  sgmcmc::SghmcParams p;
  p.friction = o.friction;
  p.num_steps = o.sghmc_steps;
  p.resample_momentum = o.resample_momentum;
  return p;
}

MethodResult run_sgld(const FitContext& c) {
  return detail::run_sampling_method(c, sg_factory<sgmcmc::SgldParams, sgmcmc::SgldSampler>(c, c.posterior, {}), {});
}
MethodResult run_sghmc(const FitContext& c) {
  return detail::run_sampling_method(c, sg_factory<sgmcmc::SghmcParams, sgmcmc::SghmcSampler>(c, c.posterior, sghmc_params(c)), {});
}
MethodResult run_psgld(const FitContext& c) {
  const auto p = psgld_options().read(c.config.method_settings);
  return detail::run_sampling_method(c, sg_factory<sgmcmc::PsgldParams, sgmcmc::PsgldSampler>(c, c.posterior, p), {});
}
MethodResult run_fsgld(const FitContext& c) {
  nlohmann::json info;
  const auto target = build_functional_posterior(c, &info);
  return detail::run_sampling_method(c, sg_factory<sgmcmc::SgldParams, sgmcmc::SgldSampler>(c, target, {}), {{"functional_prior", info}});
}
MethodResult run_fsghmc(const FitContext& c) {
  nlohmann::json info;
  const auto target = build_functional_posterior(c, &info);
  return detail::run_sampling_method(c, sg_factory<sgmcmc::SghmcParams, sgmcmc::SghmcSampler>(c, target, sghmc_params(c)),
                                     {{"functional_prior", info}});
}

const OptionGroup& chains() { return detail::chain_options().group(); }
const OptionGroup& starts() { return detail::chain_start_options().group(); }
const OptionGroup& lockstep() { return detail::lockstep_options().group(); }

/// Every SG-MCMC method: chains of the multi-chain driver, a step size the user sets.
MethodSpec sg_method(std::string name, std::string summary, std::string reference, std::vector<const OptionGroup*> groups,
                     MethodRunner run, bool functional, nlohmann::json demo_preset) {
  return {.name = std::move(name),
          .summary = std::move(summary),
          .reference = std::move(reference),
          .family = MethodFamily::StochasticGradientMcmc,
          .groups = std::move(groups),
          .run = std::move(run),
          .kept_draws = &detail::chain_kept_draws,
          .sampler_traits = [](const nlohmann::json&) { return SamplerTraits{.divergence_advice = detail::kLowerTheStepSize}; },
          .runs_in_parts = true,
          // The functional versions' prior over the logits is the Dirichlet-based GP (functional_options.hpp).
          .handles_classification = true,
          .runs_on_external_model = !functional,
          .external_model_refusal = functional ? "its prior is the NNGP kernel of uqnn's MLP architecture (the --nngp options), which a module has "
                                                 "no counterpart of"
                                               : "",
          .demo_preset = std::move(demo_preset)};
}

// The demo's presets. SG-MCMC has no automatic step size; on the demo's 20 points 1e-5 makes SGLD
// diverge, and a direction the data leave to the prior relaxes in about (prior variance / step)
// iterations, so the runs are long and thinned (each iteration is a gradient on 20 rows).
// SGHMC's step is a time step (the position moves ~eps per step, SGLD's ~sqrt(2 eps)): 2e-3 is
// stable (eps sqrt(lambda_max) ~ 0.9 < 2, sghmc.hpp) and friction 10 renews the momentum within
// about 50 steps, so lp__ relaxes fast while the momentum still carries the chain along the weak
// directions.

const bool registered_sgmcmc =
    register_method(sg_method("sgld", "stochastic-gradient Langevin dynamics", "Welling & Teh 2011",
                              {&chains(), &starts(), &sg_options().group(), &lockstep()}, &run_sgld, false,
                              // lp__ mean -152.1 and sd 8.3 against NUTS's -152.4 and 8.4; about 40 s.
                              {{"step_size", 7e-6}, {"warmup", 500000}, {"draws", 2000000}, {"thin", 1000}})) &&
    register_method(sg_method("sghmc", "stochastic-gradient HMC with friction", "Chen et al. 2014",
                              {&chains(), &starts(), &sg_options().group(), &sghmc_options().group(), &lockstep()}, &run_sghmc, false,
                              // No warning; about 3 s of CPU (docs/usage.md).
                              {{"step_size", 2e-3}, {"friction", 10.0}, {"warmup", 20000}, {"draws", 100000}, {"thin", 50}})) &&
    register_method(sg_method("psgld", "preconditioned SGLD (RMSprop)", "Li et al. 2016",
                              {&chains(), &starts(), &sg_options().group(), &psgld_options().group(), &lockstep()}, &run_psgld, false,
                              // The preconditioned step is relative: 1e-6 hardly moves the chains.
                              {{"step_size", 5e-5}, {"warmup", 100000}, {"draws", 600000}, {"thin", 300}})) &&
    register_method(sg_method("fsgld", "functional SGLD: GP prior over the network's outputs", "Wu et al., Algorithm 1",
                              {&chains(), &starts(), &sg_options().group(), &functional_options().group(), &nngp_options().group()},
                              &run_fsgld, true,
                              // SGLD's stable step; the weight prior beside the GP prior (as fsghmc's); 10 training
                              // and 10 box points per measurement set instead of 40 and 40, because the GP prior at
                              // the measurement points is factorised at every iteration. At 1.2 million iterations
                              // per chain lp__'s bulk ESS was 257 of the 400 needed; at 2.2 million no warning, in
                              // about 60 s of CPU (docs/usage.md).
                              {{"step_size", 7e-6}, {"keep_weight_prior", true}, {"measurement_data", 10}, {"measurement_box", 10},
                               {"warmup", 200000}, {"draws", 2000000}, {"thin", 1000}})) &&
    register_method(sg_method("fsghmc", "functional SGHMC: GP prior over the network's outputs", "Wu et al., Algorithm 2",
                              {&chains(), &starts(), &sg_options().group(), &sghmc_options().group(), &functional_options().group(),
                               &nngp_options().group()},
                              &run_fsghmc, true,
                              // SGHMC's step and friction; the GP prior alone leaves the weights it does not pin
                              // down to wander (lp__ fell to -3000 in excursions, chain-wise R-hat 1.4-1.7), so the
                              // weight prior stays beside it. No warning; about 10 s of CPU (docs/usage.md).
                              {{"step_size", 2e-3}, {"friction", 10.0}, {"keep_weight_prior", true}, {"warmup", 20000},
                               {"draws", 100000}, {"thin", 50}}));

}  // namespace

}  // namespace uqnn

#include "sampler_options.hpp"

#include <fmt/format.h>

#include <cmath>
#include <string>

#include "uqnn/core/error.hpp"

namespace uqnn::detail {

CheckpointInterval parse_checkpoint_interval(const std::string& text, const std::string& where) {
  CheckpointInterval every;
  if (text.empty()) return every;
  const auto fail = [&]() -> CheckpointInterval {
    throw InputError(fmt::format("{}: '{}' is invalid: it must be a number of iterations >= 1 (e.g. 500) or a time "
                                 "> 0 with its unit s, m or h (e.g. 90s, 10m, 2h)",
                                 where, text));
  };
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    return fail();
  }
  const std::string unit = text.substr(used);
  if (!std::isfinite(value) || !(value > 0)) return fail();
  if (unit.empty()) {
    if (value != std::floor(value) || value > 1e15) return fail();
    every.iterations = static_cast<long>(value);
  } else if (unit == "s" || unit == "m" || unit == "h") {
    every.seconds = value * (unit == "s" ? 1.0 : unit == "m" ? 60.0 : 3600.0);
  } else {
    return fail();
  }
  return every;
}

const OptionSchema<StepOptions>& step_options() {
  static const auto s = OptionSchema<StepOptions>("step", "Step size")
                            .add("step_size", &StepOptions::step_size,
                                 "initial (adapted) or fixed step size; unset = automatic (Stan's heuristic in warmup)")
                            .above(0)
                            .add("adapt", &StepOptions::adapt,
                                 "warmup adapts the step size and metric (--no-adapt: fixed --step-size, unit metric)");
  return s;
}

const OptionSchema<LockstepOptions>& lockstep_options() {
  static const auto s = OptionSchema<LockstepOptions>("lockstep", "Lockstep")
                            .add("lockstep", &LockstepOptions::lockstep,
                                 "the chains (ens, rms: the members) of each thread evaluate their gradients together, one per SIMD "
                                 "lane (mlp networks; results do not depend on --threads, and differ to rounding from a run without)");
  return s;
}

const OptionSchema<ChainStartOptions>& chain_start_options() {
  static const auto s = OptionSchema<ChainStartOptions>("chain_start", "Chain starts")
                            .add("chain_init", &ChainStartOptions::chain_init,
                                 "chain starts: map (each chain from its own MAP fit) | random (network initialisation) | prior (a prior draw)")
                            .one_of({"map", "random", "prior"})
                            .cite("QUiNN's zflag (QUiNN's manual)");
  return s;
}

MethodResult run_sampling_method(const FitContext& context, const SamplerFactory& factory, nlohmann::json info) {
  const FitConfig& cfg = context.config;
  const ChainOptions chains = chain_options().read(cfg.method_settings);
  const std::string init = chain_start_options().read(cfg.method_settings).chain_init;
  const auto& post = context.posterior;
  RunConfig run = chain_run_config(cfg, chains);
  run.lockstep = lockstep_options().read(cfg.method_settings).lockstep;
  run.validate();
  InitialPoints initial;
  if (init == "map") {
    // Each chain from its own MAP fit from its own initialisation (chain c uses Rng(seed, c)).
    initial = InitialPointFn([&context](int, Rng& rng) { return train_map(context, context.initial_point(rng), rng, false).best_theta; });
  } else if (init == "random") {
    initial = InitialPointFn([&context](int, Rng& rng) { return context.initial_point(rng); });
  } else {
    initial = InitialPointFn([post](int, Rng& rng) { return post->sample_prior(rng); });
  }
  const ChainRunObservers observers(context);
  context.log(fmt::format("{}: {} chains x ({} warmup + {} draws), init {}", cfg.method, chains.chains, chains.warmup, chains.draws, init));
  const RunResult r = run_chains(run, factory, initial, observers.list());

  MethodResult result;
  result.draws = kept_draws(r);
  info.update({{"sampler", cfg.method},
               {"chains", r.num_chains()},
               {"warmup", chains.warmup},
               {"draws_per_chain", r.min_draws()},
               {"thin", chains.thin},
               {"init", init},
               {"divergences", r.num_divergent()},
               {"divergences_warmup", r.num_divergent_warmup()},
               {"mean_accept_stat", mean_accept_prob(result.draws)},
               {"interrupted", r.interrupted},
               {"sampling_seconds", r.seconds},
               {"tuned", r.sampler_descriptions}});
  if (cfg.resume) info["resumed_at_iteration"] = r.resumed_at;  // per chain; 0: started afresh
  result.info = std::move(info);
  // (With no draw yet, run_fit says that it stopped before the first draw.)
  if (r.interrupted && !result.draws.empty()) context.log("interrupted: keeping the draws made so far");
  return result;
}

}  // namespace uqnn::detail

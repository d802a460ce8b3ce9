// `uqnn fit --method mala`: Metropolis-adjusted Langevin with the asymmetric-proposal MH ratio; in
// Stan's warmup the step size is adapted to an acceptance of 0.574 and a diagonal metric is learnt
// (without it, posteriors with scales 100x apart leave the widest coordinates unconverged).
#include "sampler_options.hpp"
#include "uqnn/run/chain_samplers.hpp"

namespace uqnn {

namespace {

SamplerFactory make_mala(std::shared_ptr<const LogDensity> density, const nlohmann::json& settings) {
  const detail::StepOptions step = detail::step_options().read(settings);
  MalaConfig config;
  if (step.step_size) config.kernel.step_size = *step.step_size;
  else if (!step.adapt) throw InputError("--step-size is required when adaptation is off (--no-adapt)");
  config.warmup.adapt_step_size = step.adapt;
  if (!step.adapt) config.warmup.metric = MetricAdaptation::None;  // seed 001: fixed eps, unit metric
  return make_sampler_factory(std::move(density), config);
}

const bool registered_mala = register_method(
    {"mala", "Metropolis-adjusted Langevin algorithm, step size adapted to 0.574 and a diagonal metric in Stan's warmup", "Roberts & Tweedie 1996; QUiNN's manual",
     {&detail::chain_options().group(), &detail::chain_start_options().group(), &detail::step_options().group()},
     {},
     nullptr,
     true,
     &make_mala});

}  // namespace

}  // namespace uqnn

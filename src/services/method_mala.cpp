// `uqnn fit --method mala`: Metropolis-adjusted Langevin with the asymmetric-proposal MH ratio; the
// step size adapted to an acceptance of 0.574 in warmup.
#include "sampler_options.hpp"
#include "uqnn/run/chain_samplers.hpp"

namespace uqnn {

namespace {

MethodResult run_mala(const FitContext& context) {
  const detail::StepOptions step = detail::step_options().read(context.config.method_settings);
  MalaConfig config;
  if (step.step_size) config.kernel.step_size = *step.step_size;
  else if (!step.adapt) throw InputError("--step-size is required when adaptation is off (--no-adapt)");
  config.adapt_step_size = step.adapt;
  return detail::run_sampling_method(context, make_sampler_factory(context.posterior, config), {});
}

const bool registered = register_method(
    {"mala", "Metropolis-adjusted Langevin algorithm, step size adapted to 0.574", "Roberts & Tweedie 1996; QUiNN's manual",
     {&detail::chain_options().group(), &detail::chain_start_options().group(), &detail::step_options().group()},
     {},
     &run_mala, true});

}  // namespace

}  // namespace uqnn

// `uqnn fit --method hmc`: Hamiltonian Monte Carlo with L leapfrog steps (seed 001) and Stan's warmup.
#include "sampler_options.hpp"

namespace uqnn {

namespace {

const OptionSchema<HmcConfig>& hmc_options() {
  static auto s = [] {
    OptionSchema<HmcConfig> schema("hmc", "HMC");
    schema.add_nested("num_steps", [](HmcConfig& c) -> int& { return c.kernel.num_leapfrog_steps; }, "leapfrog steps L per transition")
        .at_least(1)
        .cite("QUiNN's manual, HMC");
    return detail::add_hamiltonian_tuning(schema);
  }();
  return s;
}

MethodResult run_hmc(const FitContext& context) { return detail::run_hamiltonian(context, hmc_options()); }

const bool registered = register_method(
    {"hmc", "Hamiltonian Monte Carlo, L leapfrog steps, Stan's warmup", "Neal 2011; QUiNN's manual",
     {&detail::chain_options().group(), &detail::chain_start_options().group(), &detail::step_options().group(),
      &hmc_options().group()},
     {},
     &run_hmc, true});

}  // namespace

}  // namespace uqnn

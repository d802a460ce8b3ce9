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

SamplerFactory make_hmc(std::shared_ptr<const LogDensity> density, const nlohmann::json& settings) {
  return detail::make_hamiltonian_sampler(std::move(density), settings, hmc_options());
}

const bool registered_hmc = register_method(
    {"hmc", "Hamiltonian Monte Carlo, L leapfrog steps, Stan's warmup", "Neal 2011; QUiNN's manual",
     {&detail::chain_options().group(), &detail::chain_start_options().group(), &detail::step_options().group(), &detail::lockstep_options().group(),
      &hmc_options().group()},
     {},
     nullptr,
     true,
     &make_hmc,
     &detail::metric_memory});

}  // namespace

}  // namespace uqnn

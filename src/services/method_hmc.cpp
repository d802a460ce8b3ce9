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

const bool registered_hmc = register_method({
    .name = "hmc",
    .summary = "Hamiltonian Monte Carlo, L leapfrog steps, Stan's warmup",
    .reference = "Neal 2011; QUiNN's manual",
    .family = MethodFamily::Mcmc,
    .groups = {&detail::chain_options().group(), &detail::chain_start_options().group(), &detail::step_options().group(),
               &detail::lockstep_options().group(), &hmc_options().group()},
    .sampler = &make_hmc,
    .kept_draws = &detail::chain_kept_draws,
    .memory = [](const FitConfig& config, Index num_params) {
      return detail::metric_memory(config, num_params, hmc_options().read(config.method_settings).warmup.metric);
    },
    .sampler_traits = &detail::hamiltonian_traits,
    .runs_in_parts = true,
    .runs_on_external_model = true,
    // With 10 leapfrog steps lp__ moves like a random walk (bulk ESS 47 per 1,000 draws): longer
    // trajectories and a longer, thinned run.
    .demo_preset = {{"warmup", 3000}, {"draws", 16000}, {"thin", 8}, {"num_steps", 40}}});

}  // namespace

}  // namespace uqnn

// `uqnn fit --method mclmc`: microcanonical Langevin Monte Carlo (no Metropolis step) through the
// multi-chain driver, with its step size, decoherence length L and diagonal preconditioner tuned in
// warmup (include/uqnn/run/mclmc_sampler.hpp). Tuning defaults are BlackJAX's: Var[E]/d = 5e-4,
// preconditioning on, warmup in three equal phases; runs are 10,000 + 10,000 steps thinned by 10
// (MclmcRunDefaults: cheap steps, many per effective draw).
#include "sampler_options.hpp"

namespace uqnn {

namespace {

struct MclmcOptions {
  MclmcTuningParams tuning;
  std::optional<double> energy_variance_end;
  std::optional<double> length;  ///< L: the start of tuning, or fixed with --no-adapt
};

MclmcTuningParams& tuning_of(MclmcOptions& o) { return o.tuning; }
std::optional<double>& end_of(MclmcOptions& o) { return o.energy_variance_end; }

const OptionSchema<MclmcOptions>& mclmc_options() {
  static const auto s = [] {
    auto schema = OptionSchema<MclmcOptions>("mclmc", "MCLMC (microcanonical Langevin)");
    schema.add("mclmc_length", &MclmcOptions::length,
               "momentum decoherence length L (unset: tuned from sqrt(K); required with --no-adapt)")
        .above(0)
        .cite("Robnik & Seljak 2024");
    detail::add_mclmc_tuning(schema, &tuning_of, &end_of);
    return schema;
  }();
  return s;
}

/// The sampler configuration from the method's options and the shared step options.
MclmcConfig mclmc_config(const nlohmann::json& settings) {
  const MclmcOptions o = mclmc_options().read(settings);
  const detail::StepOptions step = detail::step_options().read(settings);
  MclmcConfig config;
  config.tuning = o.tuning;
  config.tuning.energy_variance_end = o.energy_variance_end.value_or(o.tuning.energy_variance_start);
  config.adapt = step.adapt;
  if (step.adapt) {
    config.tuning.initial_step_size = step.step_size;
    config.tuning.initial_L = o.length;
  } else {
    if (!step.step_size || !o.length) throw InputError("--no-adapt needs both --step-size and --mclmc-length");
    config.kernel.step_size = *step.step_size;
    config.kernel.L = *o.length;
  }
  return config;
}

SamplerFactory make_mclmc(std::shared_ptr<const LogDensity> density, const nlohmann::json& settings) {
  const MclmcConfig config = mclmc_config(settings);
  try {
    return make_mclmc_factory(std::move(density), config);
  } catch (const std::invalid_argument& e) {
    throw InputError(e.what());
  }
}

const bool registered_mclmc = register_method({
    .name = "mclmc",
    .summary = "microcanonical Langevin Monte Carlo: step size, L and a diagonal preconditioner tuned in warmup (unadjusted)",
    .reference = "Robnik et al. 2023; Robnik & Seljak 2024; BlackJAX",
    .family = MethodFamily::Mcmc,
    .groups = {&detail::chain_options().group(), &detail::chain_start_options().group(), &detail::step_options().group(),
               &detail::lockstep_options().group(), &mclmc_options().group()},
    .fit_defaults = {{"warmup", MclmcRunDefaults::warmup}, {"draws", MclmcRunDefaults::draws}, {"thin", MclmcRunDefaults::thin}},
    .sampler = &make_mclmc,
    .kept_draws = &detail::chain_kept_draws,
    .sampler_traits = [](const nlohmann::json& settings) {
      return SamplerTraits{.divergence_advice = detail::step_options().read(settings).adapt ? detail::kMclmcDivergenceAdvice
                                                                                             : detail::kLowerTheStepSize};
    },
    .runs_in_parts = true,
    // Cheap steps, many per effective draw: 20,000 draws thinned by 10 left log_lik's ESS at 295
    // on one seed of three.
    .demo_preset = {{"warmup", 10000}, {"draws", 40000}, {"thin", 20}}});

}  // namespace

}  // namespace uqnn

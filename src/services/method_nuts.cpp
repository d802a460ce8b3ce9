// `uqnn fit --method nuts`: the No-U-Turn sampler (multinomial, generalized U-turn criterion) with
// Stan's warmup, through the multi-chain driver.
#include "sampler_options.hpp"

namespace uqnn {

namespace {

const OptionSchema<NutsConfig>& nuts_options() {
  static auto s = [] {
    OptionSchema<NutsConfig> schema("nuts", "NUTS");
    schema.add_nested("max_depth", [](NutsConfig& c) -> int& { return c.kernel.max_depth; }, "maximum tree depth")
        .at_least(1)
        .at_most(30)
        .cite("Hoffman & Gelman 2014; Stan's default 10");
    return detail::add_hamiltonian_tuning(schema);
  }();
  return s;
}

SamplerFactory make_nuts(std::shared_ptr<const LogDensity> density, const nlohmann::json& settings) {
  return detail::make_hamiltonian_sampler(std::move(density), settings, nuts_options());
}

std::vector<MemoryItem> nuts_memory(const FitConfig& config, Index num_params) {
  const NutsConfig nuts = nuts_options().read(config.method_settings);
  std::vector<MemoryItem> items = detail::metric_memory(config, num_params, nuts.warmup.metric);
  const double chains = static_cast<double>(detail::chain_options().read(config.method_settings).chains);
  items.push_back(detail::nuts_tree_memory(config, num_params, chains, nuts.kernel.max_depth));
  return items;
}

const bool registered_nuts = register_method({
    .name = "nuts",
    .summary = "No-U-Turn sampler with Stan's warmup (dual averaging, windowed metric)",
    .reference = "Hoffman & Gelman 2014; Betancourt 2017",
    .family = MethodFamily::Mcmc,
    .groups = {&detail::chain_options().group(), &detail::chain_start_options().group(), &detail::step_options().group(),
               &detail::lockstep_options().group(), &nuts_options().group()},
    .sampler = &make_nuts,
    .kept_draws = &detail::chain_kept_draws,
    .memory = &nuts_memory,
    .sampler_traits = [](const nlohmann::json& settings) {
      SamplerTraits traits = detail::hamiltonian_traits(settings);
      traits.max_tree_depth = nuts_options().read(settings).kernel.max_depth;
      return traits;
    },
    .runs_in_parts = true,
    .runs_on_external_model = true,
    // 300 + 300 iterations per chain reach bulk ESS above 100 per chain on lp__ and the predictive
    // (docs/usage.md); each chain starts from its own MAP fit, trained to convergence.
    .demo_preset = {{"warmup", 300}, {"draws", 300}, {"epochs", 6000}}});

}  // namespace

}  // namespace uqnn

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
  std::vector<MemoryItem> items = detail::metric_memory(config, num_params);
  items.push_back(detail::nuts_tree_memory(config, num_params, static_cast<double>(config.method_settings.value("chains", 4L))));
  return items;
}

const bool registered_nuts = register_method(
    {"nuts", "No-U-Turn sampler with Stan's warmup (dual averaging, windowed metric)", "Hoffman & Gelman 2014; Betancourt 2017",
     {&detail::chain_options().group(), &detail::chain_start_options().group(), &detail::step_options().group(), &detail::lockstep_options().group(),
      &nuts_options().group()},
     {},
     nullptr,
     true,
     &make_nuts,
     &nuts_memory});

}  // namespace

}  // namespace uqnn

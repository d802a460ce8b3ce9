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

const bool registered_nuts = register_method(
    {"nuts", "No-U-Turn sampler with Stan's warmup (dual averaging, windowed metric)", "Hoffman & Gelman 2014; Betancourt 2017",
     {&detail::chain_options().group(), &detail::chain_start_options().group(), &detail::step_options().group(),
      &nuts_options().group()},
     {},
     nullptr,
     true,
     &make_nuts,
     &detail::dense_metric_memory});

}  // namespace

}  // namespace uqnn

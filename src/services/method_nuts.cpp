// `uqnn fit --method nuts`: the No-U-Turn sampler (multinomial, generalized U-turn criterion) with
// Stan's warmup, through the multi-chain driver.
#include <fmt/format.h>

#include <algorithm>
#include <thread>

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

/// While it builds a tree NUTS keeps about ten K-vectors per level in each chain (the ends of
/// every open subtree, their proposals and momentum sums): measured at K = 161k, 1-6 levels
/// (FitMemoryCli), beside the working vectors every chain has. Counted as 12 for a margin.
std::vector<MemoryItem> nuts_memory(const FitConfig& config, Index num_params) {
  std::vector<MemoryItem> items = detail::dense_metric_memory(config, num_params);
  const double hardware = std::max(1u, std::thread::hardware_concurrency());
  const double chains = std::min(static_cast<double>(config.method_settings.value("chains", 4L)),
                                 config.threads > 0 ? static_cast<double>(config.threads) : hardware);
  const double depth = static_cast<double>(config.method_settings.value("max_depth", 10));
  const double K = static_cast<double>(num_params);
  items.push_back({fmt::format("NUTS trees: {:.0f} chains at a time x {:.0f} levels x 12 vectors of {:.0f}", chains, depth, K),
                   12.0 * 8.0 * chains * depth * K, "a smaller --max-depth or --arch, or fewer --threads"});
  return items;
}

const bool registered_nuts = register_method(
    {"nuts", "No-U-Turn sampler with Stan's warmup (dual averaging, windowed metric)", "Hoffman & Gelman 2014; Betancourt 2017",
     {&detail::chain_options().group(), &detail::chain_start_options().group(), &detail::step_options().group(),
      &nuts_options().group()},
     {},
     nullptr,
     true,
     &make_nuts,
     &nuts_memory});

}  // namespace

}  // namespace uqnn

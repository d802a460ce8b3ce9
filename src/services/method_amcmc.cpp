// `uqnn fit --method amcmc`: adaptive Metropolis (Haario et al. 2001, as in QUiNN's manual).
#include "sampler_options.hpp"
#include "uqnn/run/chain_samplers.hpp"

namespace uqnn {

namespace {

const OptionSchema<AdaptiveMetropolisConfig>& amcmc_options() {
  using C = AdaptiveMetropolisConfig;
  static const auto s =
      OptionSchema<C>("amcmc", "Adaptive Metropolis")
          .add_nested("am_gamma", [](C& c) -> double& { return c.kernel.gamma; }, "proposal scale factor gamma")
          .above(0)
          .cite("Haario et al. 2001; QUiNN's manual")
          .add_nested("am_t0", [](C& c) -> long& { return c.kernel.t0; }, "first adaptation after t0 steps")
          .at_least(1)
          .add_nested("am_t_adapt", [](C& c) -> long& { return c.kernel.t_adapt; }, "covariance refreshed every t_adapt steps")
          .at_least(1);
  return s;
}

SamplerFactory make_amcmc(std::shared_ptr<const LogDensity> density, const nlohmann::json& settings) {
  return make_sampler_factory(std::move(density), amcmc_options().read(settings));
}

const bool registered = register_method(
    {"amcmc", "adaptive Metropolis", "Haario et al. 2001; QUiNN's manual",
     {&detail::chain_options().group(), &detail::chain_start_options().group(), &amcmc_options().group()},
     {},
     nullptr,
     true,
     &make_amcmc});

}  // namespace

}  // namespace uqnn

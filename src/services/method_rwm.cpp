// `uqnn fit --method rwm`: random-walk Metropolis with per-coordinate scales and a step tuned to an
// acceptance of 0.234 in warmup (include/uqnn/mcmc/random_walk.hpp), through the multi-chain driver.
#include "sampler_options.hpp"
#include "uqnn/mcmc/random_walk.hpp"

namespace uqnn {

namespace {

const OptionSchema<RandomWalkParams>& rwm_options() {
  static const auto s = OptionSchema<RandomWalkParams>("rwm", "Random-walk Metropolis")
                            .add("rwm_target_accept", &RandomWalkParams::target_accept, "warmup tunes the step to this acceptance rate")
                            .above(0)
                            .below(1)
                            .cite("Roberts, Gelman & Gilks 1997");
  return s;
}

SamplerFactory make_rwm(std::shared_ptr<const LogDensity> density, const nlohmann::json& settings) {
  RandomWalkParams params = rwm_options().read(settings);
  params.validate(density->dim());
  return [density, params]() { return std::make_unique<RandomWalkChainSampler>(density, params); };
}

const bool registered_rwm = register_method({
    .name = "rwm",
    .summary = "random-walk Metropolis (no gradients; per-coordinate scales and step tuned in warmup)",
    .reference = "Metropolis et al. 1953; Roberts, Gelman & Gilks 1997",
    .family = MethodFamily::Mcmc,
    .groups = {&detail::chain_options().group(), &detail::chain_start_options().group(), &rwm_options().group()},
    // A random walk's draws are strongly autocorrelated (at best about 0.3 / K effective draws per
    // draw, Roberts, Gelman & Gilks 1997), but each costs one density evaluation: long runs, thinned.
    .fit_defaults = {{"warmup", 4000}, {"draws", 20000}, {"thin", 5}},
    .sampler = &make_rwm,
    .kept_draws = &detail::chain_kept_draws,
    .sampler_traits = &detail::non_finite_density_traits,
    .runs_in_parts = true,
    .external_model_refusal = "a gradient-free sampler needs far more network evaluations per effective draw than nuts, hmc or mala, each a call into PyTorch",
    // The demo's 141 correlated weights: a long warmup for the per-coordinate scales, then 4 million
    // draws per chain thinned by 1000. With 20,000 + 400,000 lp__'s bulk ESS was 37 and one chain sat
    // 20 below the others; here lp__ has NUTS's mean and sd in every chain, in about 55 s of CPU.
    .demo_preset = {{"warmup", 200000}, {"draws", 4000000}, {"thin", 1000}}});

}  // namespace

}  // namespace uqnn

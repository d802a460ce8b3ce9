// `uqnn fit --method amcmc`: adaptive Metropolis. By default its proposal starts at the inverse
// curvature of the chain's start and adapts in Stan's warmup windows with a tuned scale, then stays
// fixed; above 1000 parameters it is diagonal (--am-covariance). `--am-adaptation haario --am-start
// identity --am-adapt-during-sampling` is QUiNN's manual (Haario et al. 2001).
#include <fmt/format.h>

#include "sampler_options.hpp"
#include "uqnn/run/chain_samplers.hpp"

namespace uqnn {

namespace {

const OptionSchema<AdaptiveMetropolisConfig>& amcmc_options() {
  using C = AdaptiveMetropolisConfig;
  static const auto s =
      OptionSchema<C>("amcmc", "Adaptive Metropolis")
          .add_choice("am_adaptation", [](C& c) -> AmAdaptation& { return c.adaptation; },
                      {{"windowed", AmAdaptation::Windowed}, {"haario", AmAdaptation::Haario}},
                      "windowed: covariance of Stan's doubling warmup windows, scale tuned to 0.234 acceptance | "
                      "haario: QUiNN's manual (gamma 2.4^2/K (C_t + 1e-8 I) of the whole history, at t0 and every t_adapt)")
          .cite("Andrieu & Thoms 2008, sec. 5; Haario et al. 2001")
          .add_choice("am_start", [](C& c) -> AmStart& { return c.start; },
                      {{"curvature", AmStart::Curvature}, {"identity", AmStart::Identity}},
                      "initial proposal: 2.4^2/K times the inverse curvature at the chain's start | identity: gamma 2.4^2/K I "
                      "(QUiNN's manual)")
          .add_choice("am_covariance", [](C& c) -> AmCovariance& { return c.covariance; },
                      {{"auto", AmCovariance::Auto}, {"dense", AmCovariance::Dense}, {"diagonal", AmCovariance::Diagonal}},
                      "proposal covariance: dense (correlations; K^2 memory and time per step) | diagonal (K per step) | "
                      "auto: dense up to 1000 parameters, diagonal above")
          .add_nested("am_adapt_during_sampling", [](C& c) -> bool& { return c.adapt_after_warmup; },
                      "keep refreshing the proposal from the whole history after warmup (QUiNN's behaviour; the chain is "
                      "then not Markov)")
          .add_nested("am_target_accept", [](C& c) -> double& { return c.scale_adaptation.target_accept; },
                      "windowed: acceptance rate the proposal scale is tuned to")
          .above(0)
          .below(1)
          .cite("Roberts, Gelman & Gilks 1997")
          .add_nested("am_gamma", [](C& c) -> double& { return c.kernel.gamma; }, "haario: proposal scale factor gamma")
          .above(0)
          .cite("Haario et al. 2001; QUiNN's manual")
          .add_nested("am_t0", [](C& c) -> long& { return c.kernel.t0; }, "haario: first adaptation after t0 steps")
          .at_least(1)
          .add_nested("am_t_adapt", [](C& c) -> long& { return c.kernel.t_adapt; }, "haario: covariance refreshed every t_adapt steps")
          .at_least(1);
  return s;
}

SamplerFactory make_amcmc(std::shared_ptr<const LogDensity> density, const nlohmann::json& settings) {
  return make_sampler_factory(std::move(density), amcmc_options().read(settings));
}

/// A dense proposal keeps K x K matrices per chain: the history's covariance (Welford), the
/// proposal's Cholesky factor, the curvature start and its factor, and a temporary for the refresh.
/// A diagonal one keeps vectors, which the fit's other items dominate.
std::vector<MemoryItem> amcmc_memory(const FitConfig& config, Index num_params) {
  const AdaptiveMetropolisConfig am = amcmc_options().read(config.method_settings);
  const bool dense = am.covariance == AmCovariance::Dense || (am.covariance == AmCovariance::Auto && num_params <= kAmDenseMaxDim);
  if (!dense) return {};
  const double chains = static_cast<double>(detail::chain_options().read(config.method_settings).chains);
  const double K = static_cast<double>(num_params);
  return {{fmt::format("adaptive Metropolis' dense proposal: {:.0f} chains x 5 matrices of {:.0f} x {:.0f}", chains, K, K),
           5.0 * 8.0 * chains * K * K,
           "--am-covariance diagonal, a smaller --arch or fewer --chains, or a gradient-based sampler (--method nuts)"}};
}

const bool registered_amcmc = register_method({
    .name = "amcmc",
    .summary = "adaptive Metropolis",
    .reference = "Haario et al. 2001; QUiNN's manual",
    .family = MethodFamily::Mcmc,
    .groups = {&detail::chain_options().group(), &detail::chain_start_options().group(), &amcmc_options().group()},
    // The dense proposal is learned in warmup's windows: after 1000 iterations it had not reached
    // the tails of a 10-parameter network posterior (SBC's rank chi-square 57 against a critical
    // 27.9; 5000: 23.6, tests/unit/mcmc/sbc_test.cpp). A random walk needs more draws than NUTS for
    // the same ESS (at best 0.3 / K per draw, Roberts, Gelman & Gilks 1997), at one density
    // evaluation each: with 1000 per chain the worst coordinate of a 5-parameter regression had
    // MCSE / sd 0.07-0.16 over 40 seeds (ESS ~40-200 of 4000 draws), with 5000 at most 0.047.
    .fit_defaults = {{"warmup", 5000}, {"draws", 5000}},
    .sampler = &make_amcmc,
    .kept_draws = &detail::chain_kept_draws,
    .memory = &amcmc_memory,
    .sampler_traits = &detail::non_finite_density_traits,
    .runs_in_parts = true,
    .external_model_refusal = "a gradient-free sampler needs far more network evaluations per effective draw than nuts, hmc or mala, each a call into PyTorch",
    // The demo's 141 correlated weights: a dense proposal learnt in warmup left the chains near their
    // MAP starts (lp__ -121 against NUTS's -152, with 200,000 + 2 million iterations, windowed or
    // Haario's), a diagonal one reaches NUTS's lp__ as rwm does. With 200,000 + 6 million one chain
    // still drifted (chain-wise R-hat of lp__ 1.29); with twice both, thinned to 4,000 draws per chain,
    // lp__ has NUTS's mean and sd. The scale is re-tuned after the last window only over Stan's
    // 50-iteration terminal buffer, so the acceptance after warmup varies between chains (3-21%).
    .demo_preset = {{"am_covariance", "diagonal"}, {"warmup", 400000}, {"draws", 12000000}, {"thin", 3000}}});

}  // namespace

}  // namespace uqnn

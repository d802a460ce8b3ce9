// `uqnn fit --method mala`: Metropolis-adjusted Langevin with the asymmetric-proposal MH ratio; in
// Stan's warmup the step size is adapted to an acceptance of 0.574 and the metric is learnt
// (without it, posteriors with scales 100x apart leave the widest coordinates unconverged).
#include <optional>

#include "sampler_options.hpp"
#include "uqnn/run/chain_samplers.hpp"

namespace uqnn {

namespace {

/// Up to this many parameters --metric auto is dense: K^2 is then small next to a gradient, and a
/// diagonal metric leaves MALA, whose step is set by the narrowest direction, crawling along a
/// correlated pair (posteriordb's sblrc-blr: bulk ESS 57-61 and R-hat 1.07 with diag, above 830 and
/// at most 1.006 with dense).
constexpr Index kDenseMetricUpTo = 100;

/// MALA's settings: the library's config and --metric, where unset (auto) depends on K.
struct MalaSettings : MalaConfig {
  std::optional<MetricAdaptation> metric;
};

const OptionSchema<MalaSettings>& mala_options() {
  static const auto s = OptionSchema<MalaSettings>("mala", "MALA")
                            .add_choice("metric", [](MalaSettings& c) -> std::optional<MetricAdaptation>& { return c.metric; },
                                        std::vector<std::pair<std::string, std::optional<MetricAdaptation>>>{
                                            {"auto", std::nullopt},
                                            {"diag", MetricAdaptation::Diagonal},
                                            {"dense", MetricAdaptation::Dense},
                                            {"fisher-diag", MetricAdaptation::FisherDiagonal},
                                            {"low-rank", MetricAdaptation::LowRank},
                                            {"unit", MetricAdaptation::None}},
                                        "inverse metric adapted in Stan's warmup windows (unit: none); dense whitens "
                                        "correlated parameters, at K^2 memory per chain; fisher-diag and low-rank use the "
                                        "draw/gradient pairs (nutpie's); auto: dense up to 100 parameters, diag above")
                            .cite("Girolami & Calderhead 2011 (preconditioned MALA)");
  return s;
}

SamplerFactory make_mala(std::shared_ptr<const LogDensity> density, const nlohmann::json& settings) {
  const MalaSettings read = mala_options().read(settings);
  MalaConfig config = read;
  config.warmup.metric = read.metric.value_or(density->dim() <= kDenseMetricUpTo ? MetricAdaptation::Dense : MetricAdaptation::Diagonal);
  detail::apply_step_options(detail::step_options().read(settings), config);  // --no-adapt: seed 001's fixed eps, unit metric
  return make_sampler_factory(std::move(density), config);
}

const bool registered_mala = register_method({
    .name = "mala",
    .summary = "Metropolis-adjusted Langevin algorithm, step size adapted to 0.574 and the metric in Stan's warmup",
    .reference = "Roberts & Tweedie 1996; QUiNN's manual",
    .family = MethodFamily::Mcmc,
    .groups = {&detail::chain_options().group(), &detail::chain_start_options().group(), &detail::step_options().group(),
               &detail::lockstep_options().group(), &mala_options().group()},
    .sampler = &make_mala,
    .kept_draws = &detail::chain_kept_draws,
    .memory = [](const FitConfig& config, Index num_params) {
      const auto metric = mala_options().read(config.method_settings).metric;
      return detail::metric_memory(config, num_params,
                                   metric.value_or(num_params <= kDenseMetricUpTo ? MetricAdaptation::Dense : MetricAdaptation::Diagonal));
    },
    // The step size is adapted to a fixed acceptance rate, not to a target the user can raise.
    .sampler_traits = [](const nlohmann::json& settings) {
      return SamplerTraits{.divergence_advice = detail::step_options().read(settings).adapt
                                                    ? "Reparameterise the model, or set a smaller step size and keep it fixed (--no-adapt --step-size)."
                                                    : detail::kLowerTheStepSize};
    },
    .runs_in_parts = true,
    .runs_on_external_model = true,
    // The demo's 141 weights take the diagonal metric, and the step is set by the stiffest direction:
    // with 400,000 warmup iterations and 4 million draws per chain one chain still drifted (chain-wise
    // R-hat of lp__ 1.11) and lp__'s bulk ESS within the chains was 239 of 400; with 8 million,
    // thinned to 4,000, lp__ has NUTS's mean and sd. A dense metric learnt there left the chains
    // near their MAP starts (lp__ -124 against NUTS's -152).
    .demo_preset = {{"warmup", 400000}, {"draws", 8000000}, {"thin", 2000}}});

}  // namespace

}  // namespace uqnn

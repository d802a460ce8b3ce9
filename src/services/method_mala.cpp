// `uqnn fit --method mala`: Metropolis-adjusted Langevin with the asymmetric-proposal MH ratio; in
// Stan's warmup the step size is adapted to an acceptance of 0.574 and a diagonal metric is learnt
// (without it, posteriors with scales 100x apart leave the widest coordinates unconverged).
#include "sampler_options.hpp"
#include "uqnn/run/chain_samplers.hpp"

namespace uqnn {

namespace {

const OptionSchema<MalaConfig>& mala_options() {
  static const auto s = OptionSchema<MalaConfig>("mala", "MALA")
                            .add_choice("metric", [](MalaConfig& c) -> MetricAdaptation& { return c.warmup.metric; },
                                        detail::metric_choices(),
                                        "inverse metric adapted in Stan's warmup windows (unit: none); dense whitens "
                                        "correlated parameters, at K^2 memory per chain")
                            .cite("Girolami & Calderhead 2011 (preconditioned MALA)");
  return s;
}

SamplerFactory make_mala(std::shared_ptr<const LogDensity> density, const nlohmann::json& settings) {
  MalaConfig config = mala_options().read(settings);
  detail::apply_step_options(detail::step_options().read(settings), config);  // --no-adapt: seed 001's fixed eps, unit metric
  return make_sampler_factory(std::move(density), config);
}

const bool registered_mala = register_method(
    {"mala", "Metropolis-adjusted Langevin algorithm, step size adapted to 0.574 and a diagonal metric in Stan's warmup", "Roberts & Tweedie 1996; QUiNN's manual",
     {&detail::chain_options().group(), &detail::chain_start_options().group(), &detail::step_options().group(),
      &mala_options().group()},
     {},
     nullptr,
     true,
     &make_mala,
     &detail::dense_metric_memory});

}  // namespace

}  // namespace uqnn

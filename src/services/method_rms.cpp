// `uqnn fit --method rms`: randomized MAP sampling / anchored ensembles (seed 001).
#include "approx_common.hpp"

namespace uqnn {

namespace {
const OptionSchema<RandomizedMapParams>& rms_options() {
  static const auto s = OptionSchema<RandomizedMapParams>("rms", "Randomized MAP")
                            .add("rms_perturb_targets", &RandomizedMapParams::perturb_targets,
                                 "also perturb the targets by N(0, sigma^2) (exact posterior draws for linear-Gaussian models)")
                            .cite("Pearce et al. 2020 (anchored ensembles); QUiNN's manual");
  return s;
}
}  // namespace

MethodResult run_randomized_map(const FitContext& c) {
  RandomizedMapParams p = rms_options().read(c.config.method_settings);
  p.ensemble = detail::ensemble_params(c);
  const bool split = c.has_validation;
  const auto fits = fit_randomized_map(*c.posterior, p, c.config.seed, split ? c.validation_inputs : Mat(),
                                       split ? c.validation_targets : Mat());
  MethodResult r = detail::ensemble_result(fits, "anchored -log posterior / |D_j|");
  r.info["data_fraction"] = p.ensemble.data_fraction;
  r.info["lockstep"] = p.ensemble.lockstep;
  r.info["perturb_targets"] = p.perturb_targets;
  return r;
}

namespace {
const bool registered_rms = register_method([] {
  MethodSpec spec{"rms", "randomized MAP sampling (anchored ensembles)", "QUiNN's manual; Pearce et al. 2020", {&detail::ensemble_options().group(), &rms_options().group(), &detail::lockstep_options().group(), &detail::training_checkpoint_options().group()}, {}, &run_randomized_map, true};
  return spec;
}());
}  // namespace

}  // namespace uqnn

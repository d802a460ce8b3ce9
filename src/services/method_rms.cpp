// `uqnn fit --method rms`: randomized MAP sampling / anchored ensembles (seed 001).
#include "approx_common.hpp"

namespace uqnn {

MethodResult run_randomized_map(const FitContext& c) {
  const ApproxOptions o = detail::approx_options(c);
  RandomizedMapParams p;
  p.ensemble = detail::ensemble_params(c, o);
  p.perturb_targets = o.rms_perturb_targets;
  const bool split = detail::has_validation_split(c);
  const auto fits = fit_randomized_map(*c.posterior, p, c.config.seed, split ? c.validation_inputs : Mat(),
                                       split ? c.validation_targets : Mat());
  MethodResult r = detail::ensemble_result(fits, "anchored -log posterior / |D_j|");
  r.info["data_fraction"] = p.ensemble.data_fraction;
  r.info["perturb_targets"] = p.perturb_targets;
  return r;
}

}  // namespace uqnn

// `uqnn fit --method ens`: deep ensemble (seed 001, MSE loss, J members, data fraction delta; the
// NLL for likelihoods other than the Gaussian).
//
// Predictive sd: the members' spread is seed 001's Var[y] (1/(J-1) sum (M_j - ybar)^2), reported as
// the epistemic sd. An MSE ensemble has no noise model, so the total sd adds the likelihood's noise:
// the fixed --noise sigma^2, or with a learned sigma (the default) the one that maximises the
// likelihood of twins of the members on the fraction --ens-noise-holdout of the rows that they did not
// train on, floored at each member's training residuals (EnsembleParams::noise_refit); with
// --no-ens-noise-refit each member's average of its training and held-out residuals; with
// --ens-noise-holdout 0 its training residuals. Intervals and NLL use that total.
//
// --lockstep (ens and rms) trains the members of each thread together, their gradients one pass
// through the lane kernel (EnsembleParams::lockstep).
#include "approx_common.hpp"

namespace uqnn {

MethodResult run_deep_ensemble(const FitContext& c) {
  EnsembleParams p = detail::ensemble_params(c);
  // Seed 001's MSE fits a Gaussian likelihood; with any other (bernoulli, categorical,
  // heteroscedastic) each member minimises the NLL, the proper scoring rule of Lakshminarayanan et
  // al. (2017).
  const std::string kind = c.posterior->likelihood().kind();
  if (kind != "gaussian" && kind != "gaussian_learned_sigma") p.loss = "nll";
  const bool split = c.has_validation;
  const auto fits = fit_deep_ensemble(*c.posterior, p, c.config.seed, split ? c.validation_inputs : Mat(),
                                      split ? c.validation_targets : Mat());
  MethodResult r = detail::ensemble_result(fits, p.loss == "nll" ? "NLL" : "MSE");
  r.info["loss"] = p.loss;
  r.info["data_fraction"] = p.data_fraction;
  r.info["lockstep"] = p.lockstep;
  if (kind == "gaussian_learned_sigma")
    r.info["noise_sd_from"] =
        p.noise_holdout <= 0 ? std::string("residuals on each member's training rows")
        : p.noise_refit      ? fmt::format("maximum likelihood of the members' twins' mixture on the {:g} of the rows they did not train on, floored at each member's training residuals", p.noise_holdout)
                             : fmt::format("average of the mean squared residuals on each member's training rows and on the {:g} of its rows held out", p.noise_holdout);
  r.info["predictive_sd"] = "sqrt(variance across members + likelihood noise variance)";
  return r;
}

namespace {
const bool registered_ens = register_method({
    .name = "ens",
    .summary = "deep ensemble: J MAP fits from their own initialisations",
    .reference = "QUiNN's manual; Lakshminarayanan et al. 2017",
    .family = MethodFamily::Ensemble,
    .groups = {&detail::ensemble_options().group(), &detail::lockstep_options().group(), &detail::training_checkpoint_options().group()},
    .run = &run_deep_ensemble,
    .kept_draws = [](const nlohmann::json& settings) { return member_draws(detail::ensemble_options().read(settings).members); },
    .runs_in_parts = true,
    .runs_on_external_model = true,
    // Adam's loss never levels off on the demo's stiff posterior (gradient 8e-4 per point after
    // 20,000 epochs, with or without a schedule); the members are full-batch MAP fits, which lbfgs
    // takes to the rounding floor the map preset describes.
    .demo_preset = {{"optimizer", "lbfgs"}, {"epochs", 20000}, {"gradient_tolerance", 1e-4}}});
}  // namespace

}  // namespace uqnn

// `uqnn fit --method laplace`: MAP, then the Laplace approximation (seed 001) with a chosen
// curvature backend and structure, the prior precision and the noise tuned by the Laplace marginal
// likelihood. The defaults are laplace-torch's (Daxberger et al. 2021): GGN curvature, prior
// precision and a learned noise sd tuned post hoc (a learned noise at the MAP is the training
// residuals' sd, which made the intervals too narrow on the UCI sets: 84-92% at 95%; tuned,
// 88-94%), and the glm predictive, through the network linearised at the MAP (the
// draws are the same; model.json records the linearised model). Seed 001's NN_Laplace is
// `--laplace-curvature exact --laplace-predictive nn --no-laplace-tune`. Note: a tuned fixed noise sd
// (--laplace-tune-noise) changes the covariance; predictions keep the likelihood's configured noise
// (reported in metrics.json info).
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <optional>

#include "approx_common.hpp"
#include "chain_run.hpp"
#include "uqnn/approx/laplace.hpp"
#include "uqnn/diagnostics/lppd.hpp"
#include "uqnn/nn/cnn.hpp"
#include "uqnn/nn/linearized_model.hpp"
#include "uqnn/nn/mlp.hpp"

namespace uqnn {

namespace {

struct LaplaceOptions {
  std::string laplace_curvature = "ggn";  ///< exact | fisher | ggn
  std::string laplace_structure = "full";   ///< full | diag | kron
  std::string laplace_subset = "all";       ///< all | last-layer
  double laplace_cov_scale = 1.0;           ///< s
  double laplace_max_memory_gb = 2.0;
  /// maximise the Laplace marginal likelihood over the prior precision and a learned noise sd
  bool laplace_tune = true;
  /// marglik: the marginal likelihood (MacKay 1992); validation: the log predictive density of the
  /// validation rows over a grid of prior precisions (laplace-torch's grid search)
  std::string laplace_tune_by = "marglik";
  bool laplace_tune_noise = false;  ///< ... and a fixed noise sd (--noise)
  Index laplace_newton_steps = 5;   ///< Newton polishing of the MAP when H is positive definite
  /// nn: seed 001's step 4, y = M(x; w) with w ~ N(w*, Sigma); glm: through the network linearised at
  /// w* (Immer et al. 2021, laplace-torch's default), see nn/linearized_model.hpp.
  std::string laplace_predictive = "glm";
};

const OptionSchema<LaplaceOptions>& laplace_options() {
  using L = LaplaceOptions;
  static const auto s =
      OptionSchema<L>("laplace", "Laplace approximation")
          .add("laplace_curvature", &L::laplace_curvature, "exact (Hessian) | fisher (empirical Fisher) | ggn (generalized Gauss-Newton)")
          .one_of({"exact", "fisher", "ggn"})
          .cite("QUiNN's manual; Daxberger et al. 2021")
          .add("laplace_structure", &L::laplace_structure,
               "full | diag | kron (K-FAC: per layer, Kronecker factors of the GGN; needs ggn and an mlp or cnn, whose conv "
               "layers get KFC's factors and whose norms and residual blocks the diagonal)")
          .one_of({"full", "diag", "kron"})
          .cite("Ritter et al. 2018 (kron)")
          .add("laplace_subset", &L::laplace_subset,
               "all | last-layer (the output layer only, the rest fixed at the MAP; laplace-torch's default subset)")
          .one_of({"all", "last-layer"})
          .cite("Daxberger et al. 2021")
          .add("laplace_cov_scale", &L::laplace_cov_scale, "s in Sigma = (s H)^-1")
          .above(0)
          .add("laplace_max_memory_gb", &L::laplace_max_memory_gb, "limit on the K x K matrices (GiB)")
          .above(0)
          .add("laplace_tune", &L::laplace_tune,
               "tune the prior precision (Gaussian priors) and a learned noise sd by the Laplace marginal likelihood; the "
               "noise as a hyperparameter, sigma^2 = r^2 / (N - effective parameters) instead of the MAP's r^2 / N")
          .add("laplace_tune_by", &L::laplace_tune_by,
               "marglik (the marginal likelihood) | validation (the prior precision, alone, that maximises the validation "
               "rows' log predictive density, on a grid of 10^-3 to 10^5 times the prior's; needs --valid-fraction or "
               "--valid: use it when the marginal likelihood leaves the predictive too wide, as on small convolutional nets "
               "whose training probabilities saturate)")
          .one_of({"marglik", "validation"})
          .cite("MacKay 1992; Daxberger et al. 2021 (validation)")
          .add("laplace_tune_noise", &L::laplace_tune_noise, "tune also a fixed noise sd (--noise): it changes the covariance, not the predictive noise")
          .add("laplace_newton_steps", &L::laplace_newton_steps, "Newton steps polishing the MAP (0 = off)")
          .at_least(0)
          .add("laplace_predictive", &L::laplace_predictive,
               "nn (QUiNN's manual: sampled weights through the network) | glm (through the network linearised at the MAP; "
               "use when most directions are prior-dominated)")
          .one_of({"nn", "glm"})
          .cite("Immer et al. 2021 (glm)");
  return s;
}

/// The prior precision factor alpha, on a grid of 10^-3 to 10^5 (4 points a decade), whose
/// approximation gives the validation rows the highest log pointwise predictive density; every
/// alpha draws with the random numbers of the final draws, so the comparison is not noise. Leaves `laplace` at
/// the best alpha and returns the search's record for metrics.json.
nlohmann::json tune_on_validation(const FitContext& c, LaplaceApproximation& laplace, bool linearised, const Vec& map) {
  const Mat& X = c.validation_inputs;
  const Mat& Y = c.validation_targets;
  if (!c.has_validation)
    throw InputError("--laplace-tune-by validation scores the prior precision on validation rows, and there are none: give "
                     "--valid-fraction F or --valid FILE");
  const Posterior& post = *c.posterior;
  const Index P = post.model().num_params(), S = detail::num_samples(c);
  const std::shared_ptr<const Model> model =
      linearised ? std::make_shared<LinearizedModel>(post.model_ptr(), Vec(post.network_params(map))) : post.model_ptr();
  const auto validation_lppd = [&]() {
    Rng rng(c.config.seed, 1);  // the final draws' stream: the best alpha's score is that of the draws returned
    const std::vector<Vec> draws = laplace.approximation()->sample(rng, S);
    Mat log_lik(S, X.cols());
    for (Index s = 0; s < S; ++s) {
      const Vec& theta = draws[static_cast<std::size_t>(s)];
      log_lik.row(s) = post.likelihood().pointwise_log_likelihood(model->forward(theta.head(P), X), Y, theta.tail(theta.size() - P)).transpose();
    }
    return diagnostics::lppd(log_lik);
  };
  nlohmann::json grid = nlohmann::json::array();
  double best_alpha = 1.0, best = -std::numeric_limits<double>::infinity();
  for (int k = -12; k <= 20; ++k) {
    const double alpha = std::pow(10.0, 0.25 * k);
    laplace.set_prior_precision_factor(alpha);
    const double value = validation_lppd();
    grid.push_back({{"prior_precision_factor", alpha}, {"validation_lppd", value}});
    if (value > best) best = value, best_alpha = alpha;  // NaN (a failed draw) never wins
  }
  laplace.set_prior_precision_factor(best_alpha);
  c.log(fmt::format("laplace: prior precision x{:.4g} maximises the validation LPPD ({:.6g}) over {} values", best_alpha, best,
                    grid.size()));
  return {{"by", "validation"}, {"prior_precision_factor", best_alpha}, {"validation_lppd", best},
          {"log_marginal_likelihood_after", laplace.log_marginal_likelihood()}, {"grid", grid}};
}

/// The grid search's best prior precision at an end of its grid: at the top, the validation rows
/// prefer the MAP network's point predictions to any spread the Laplace approximation gives.
std::optional<diagnostics::Warning> grid_edge_warning(const nlohmann::json& tuning) {
  const nlohmann::json& grid = tuning.at("grid");
  const double best = tuning.at("prior_precision_factor").get<double>();
  if (best == grid.back().at("prior_precision_factor").get<double>())
    return diagnostics::Warning{
        "laplace_tuning_at_grid_edge",
        fmt::format("laplace: the validation rows score best at the largest prior precision tried (x{:.4g}), where the draws "
                    "hardly leave the MAP: the Laplace spread does not improve on the MAP network's predictions here, so its "
                    "intervals carry little weight-uncertainty. Compare with --method ens or dropout, or --laplace-subset last-layer",
                    best)};
  if (best == grid.front().at("prior_precision_factor").get<double>())
    return diagnostics::Warning{"laplace_tuning_at_grid_edge",
                                fmt::format("laplace: the validation rows score best at the smallest prior precision tried (x{:.4g}): "
                                            "the predictive wants more spread than the prior gives; check --prior-sigma",
                                            best)};
  return std::nullopt;
}

}  // namespace

MethodResult run_laplace(const FitContext& c) {
  const LaplaceOptions o = laplace_options().read(c.config.method_settings);
  LaplaceParams p;
  p.backend = parse_curvature_backend(o.laplace_curvature);
  p.structure = parse_curvature_structure(o.laplace_structure);
  p.subset = parse_laplace_subset(o.laplace_subset);
  p.covariance_scale = o.laplace_cov_scale;
  p.max_memory_bytes = o.laplace_max_memory_gb * 1073741824.0;
  p.validate();
  // Checked before training, not only when the curvature is formed: the subset exists, full fits in memory,
  // kron has its model, curvature and prior.
  const IndexVec active = laplace_active_parameters(*c.posterior, p.subset);
  if (p.structure == CurvatureStructure::Full && laplace_full_memory_bytes(static_cast<Index>(active.size())) > p.max_memory_bytes)
    curvature_matrix(*c.posterior, Vec::Zero(c.posterior->dim()), p.backend, p.max_memory_bytes, &active);
  if (p.structure == CurvatureStructure::Kronecker) {
    if (p.backend != CurvatureBackend::GaussNewton)
      throw InputError("--laplace-structure kron factorises the generalized Gauss-Newton matrix: use --laplace-curvature ggn");
    if (c.posterior->model().kind() == "external")
      throw InputError("--laplace-structure kron factorises uqnn's own dense layers' inputs and output gradients, which a PyTorch "
                       "module does not expose: use --laplace-structure diag, or --laplace-subset last-layer");
    if (!dynamic_cast<const Mlp*>(&c.posterior->model()) && !dynamic_cast<const Cnn*>(&c.posterior->model()))
      throw InputError("--laplace-structure kron needs --model mlp with biases or --model cnn, not --model " + c.config.model.kind +
                       (c.config.model.bias ? std::string() : " --no-bias") + ": use --laplace-structure full or diag");
  }
  Rng rng(c.config.seed, 0);
  // The MAP's training checkpoints; the curvature, tuning and draws after it are recomputed bitwise.
  const TrainResult trained = train_map(c, c.initial_point(rng), rng, true, detail::epoch_checkpoint(c.config, "map.state"));
  Vec theta = trained.best_theta;
  if (o.laplace_newton_steps > 0 && laplace_full_memory_bytes(c.posterior->dim()) <= p.max_memory_bytes)
    theta = refine_map_newton(*c.posterior, theta, o.laplace_newton_steps, p.max_memory_bytes);
  LaplaceApproximation laplace(c.posterior, theta, p);
  MethodResult r;
  r.info = {{"curvature", to_string(p.backend)}, {"structure", to_string(p.structure)},
            {"subset", to_string(p.subset)}, {"active_parameters", laplace.active().size()},
            {"covariance_scale", p.covariance_scale}, {"log_marginal_likelihood", laplace.log_marginal_likelihood()},
            {"optimizer", training_info(trained.convergence)}, {"resumed_at_epoch", trained.resumed_at_epoch}};
  if (const auto w = not_converged_warning({trained.convergence}, "the MAP fit under the Laplace approximation"))
    r.warnings.push_back(*w);
  // The default tuning is skipped, with a warning, where it cannot apply; asked for explicitly
  // (--laplace-tune-noise), it fails with LaplaceApproximation::tune's message instead.
  const bool learned_noise = c.posterior->likelihood().kind() == "gaussian_learned_sigma";
  const bool ggn = p.backend == CurvatureBackend::GaussNewton;
  std::string cannot_tune;
  if (!dynamic_cast<const GaussianPrior*>(&c.posterior->prior()))
    cannot_tune = fmt::format("the marginal-likelihood updates need a Gaussian prior, not --prior {}; use --prior gaussian or fan-in",
                              c.config.probability.prior);
  else if (learned_noise && !ggn && p.structure == CurvatureStructure::Full)
    cannot_tune = fmt::format("with a learned noise the {} curvature couples it to the network; use --laplace-curvature ggn",
                              to_string(p.backend));
  const bool tune_noise = o.laplace_tune_noise || (o.laplace_tune && learned_noise && ggn);
  if (o.laplace_tune && !o.laplace_tune_noise && !cannot_tune.empty())
    r.warnings.push_back({"laplace_not_tuned", fmt::format("laplace: the prior precision was not tuned (--laplace-tune): {}, or "
                                                           "--no-laplace-tune to silence this. The intervals use the prior as given",
                                                           cannot_tune)});
  else if (o.laplace_tune && o.laplace_tune_by == "validation") {
    if (o.laplace_tune_noise)
      throw InputError("--laplace-tune-noise is a marginal-likelihood tuning: drop it, or use --laplace-tune-by marglik");
    r.info["tuning"] = tune_on_validation(c, laplace, o.laplace_predictive == "glm", theta);
    if (const auto w = grid_edge_warning(r.info["tuning"])) r.warnings.push_back(*w);
  } else if (o.laplace_tune || o.laplace_tune_noise) {
    const LaplaceTuning t = laplace.tune(tune_noise);
    r.info["tuning"] = {{"prior_precision_factor", t.prior_precision_factor},
                        {"noise_sd_standardised", t.noise_sd},
                        {"log_marginal_likelihood_before", t.log_marginal_likelihood_before},
                        {"log_marginal_likelihood_after", t.log_marginal_likelihood_after},
                        {"iterations", t.iterations},
                        {"converged", t.converged}};
    if (!t.converged)
      r.warnings.push_back({"laplace_tuning_not_converged",
                            fmt::format("laplace: the marginal-likelihood tuning did not converge in {} Newton steps; the prior "
                                        "precision (x{:.4g}) and noise are its last iterate",
                                        t.iterations, t.prior_precision_factor)});
    c.log(fmt::format("laplace: tuned prior precision x{:.4g}{}, log marginal likelihood {:.6g} -> {:.6g}", t.prior_precision_factor,
                      tune_noise ? fmt::format(", noise sd {:.4g} (standardised)", t.noise_sd) : std::string(),
                      t.log_marginal_likelihood_before, t.log_marginal_likelihood_after));
  }
  Rng sampler(c.config.seed, 1);
  r.draws = Draws::independent(laplace.approximation()->sample(sampler, detail::num_samples(c)));
  r.info["predictive"] = o.laplace_predictive;
  // Directions the data hardly constrain keep the prior's variance; networks evaluated at weights
  // drawn that far from the MAP can be useless (bands of +-20 on the demo), which the linearised
  // predictive avoids. Counted as eigenvalues of P^-1/2 H P^-1/2 (P the prior precision) below 1.01.
  const Vec relative_curvature = laplace.curvature_over_prior();
  const Index prior_dominated = (relative_curvature.array() <= 1.01).count();
  const Index S = relative_curvature.size();
  r.info["prior_dominated_directions"] = prior_dominated;
  if (o.laplace_predictive == "nn" && 2 * prior_dominated > S)
    c.log(fmt::format("laplace: {} of {} directions keep the prior's variance (curvature within 1% of the prior precision): "
                      "networks at sampled weights may give very wide bands; --laplace-predictive glm avoids that",
                      prior_dominated, S));
  if (o.laplace_predictive == "glm")
    r.predictive_model = std::make_shared<LinearizedModel>(c.posterior->model_ptr(), Vec(c.posterior->network_params(theta)));
  r.history = {{"MAP training loss (-log posterior / N)", trained.history.train_loss}};
  return r;
}

namespace {

/// Full structure: the curvature, its Cholesky factor and a temporary, each K x K (for
/// --laplace-subset last-layer the runner checks its smaller matrices once the model is known).
std::vector<MemoryItem> laplace_memory(const FitConfig& config, Index num_params) {
  const LaplaceOptions o = laplace_options().read(config.method_settings);
  if (o.laplace_structure != "full" || o.laplace_subset != "all") return {};
  const double K = static_cast<double>(num_params);
  return {{fmt::format("Laplace's full curvature: 3 matrices of {:.0f} x {:.0f}", K, K), 3.0 * 8.0 * K * K,
           "--laplace-structure kron or diag, --laplace-subset last-layer, or a smaller --arch"}};
}

const bool registered_laplace = register_method({
    .name = "laplace",
    .summary = "Laplace approximation at the MAP (exact Hessian, empirical Fisher or GGN; full or diagonal)",
    .reference = "QUiNN's manual; MacKay 1992; Daxberger et al. 2021",
    .family = MethodFamily::Approximation,
    .groups = {&detail::samples_options().group(), &laplace_options().group(), &detail::training_checkpoint_options().group()},
    .run = &run_laplace,
    .kept_draws = [](const nlohmann::json& settings) { return approximation_draws(detail::samples_options().read(settings).num_samples); },
    .memory = &laplace_memory,
    .runs_on_external_model = true,
    // lbfgs stalls at the objective's rounding floor on the demo's 20 points (a gradient norm per
    // point of 1.6e-5 to 3.7e-5 after about 4,000 evaluations; 20,000 epochs change nothing): the
    // default tolerance of 1e-8 lies below it.
    .demo_preset = {{"epochs", 6000}, {"gradient_tolerance", 1e-4}}});
}  // namespace

}  // namespace uqnn

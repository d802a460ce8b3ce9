// `uqnn fit --method nngp`: exact Gaussian-process regression with the infinite-width kernel of the
// fit's network (Lee et al. 2018), a baseline that needs no weights at all: the kernel's signal and
// noise variances maximise the marginal likelihood on the training rows, and the posterior is written
// as a one-parameter model (nn/nngp_posterior_model.hpp) whose draws are stratified normal quantiles,
// so predictions, files and `uqnn predict` are every method's.
#include <fmt/format.h>

#include "approx_common.hpp"
#include "uqnn/diagnostics/normal_quantile.hpp"
#include "uqnn/nn/nngp_posterior_model.hpp"
#include "uqnn/optim/gaussian_process_fit.hpp"
#include "uqnn/services/functional_options.hpp"

namespace uqnn {

namespace {

/// Exact GP regression factorises an N x N matrix: O(N^3) time, 3 N^2 doubles.
constexpr Index kMaxRows = 10000;

MethodResult run_nngp(const FitContext& c) {
  const auto& post = c.posterior;
  if (post->likelihood().kind() != "gaussian_learned_sigma")
    throw InputError("--method nngp (exact GP regression) and the noise variance it fits by the marginal likelihood need "
                     "--likelihood gaussian without --noise, not '" + post->likelihood().kind() + "'");
  if (post->targets().rows() != 1)
    throw InputError(fmt::format("--method nngp models one target; the data have {} (--targets)", post->targets().rows()));
  if (c.config.probability.prior != "gaussian")
    throw InputError("--method nngp's prior is the infinite-width network's Gaussian process (--nngp-weight-variance, "
                     "--nngp-bias-variance): --prior " + c.config.probability.prior + " does not apply");
  const Index n = post->num_data();
  if (n > kMaxRows)
    throw InputError(fmt::format("--method nngp is exact GP regression, O(N^3) in the {} training rows (at most {}): use "
                                 "--method fsgld --gp-kernel nngp, or fewer rows (--test-fraction)",
                                 n, kMaxRows));
  GpFitParams fit;
  fit.kernel = GpKernel::Nngp;
  fit.nngp = nngp_architecture(c.config, "--method nngp");
  fit.iterations = 1000;  // two log variances on one eigendecomposition: cheap, and run to the optimum
  fit.max_points = std::max<Index>(2, n);
  Rng rng(c.config.seed, 0);
  const Vec y = post->targets().row(0).transpose();
  const GaussianProcess gp = fit_gaussian_process(post->inputs(), y, fit, rng);
  const GpHyperparameters& h = gp.hyperparameters();
  c.log("nngp: " + gp.describe());
  auto model = std::make_shared<NngpPosteriorModel>(fit.nngp, h.signal_variance, h.noise_variance, post->inputs(), post->targets());
  MethodResult r;
  // z ~ N(0, 1) is the quantile parameter's prior; the noise keeps the likelihood's own prior.
  r.posterior = std::make_shared<Posterior>(model, post->likelihood_ptr(), GaussianPrior::isotropic(1, 1.0), post->inputs(),
                                            post->targets());
  const Index S = detail::num_samples(c);
  std::vector<Vec> draws;
  for (Index s = 0; s < S; ++s) {
    Vec theta(2);
    theta << diagnostics::inverse_normal_cdf((static_cast<double>(s) + 0.5) / static_cast<double>(S)), 0.5 * std::log(h.noise_variance);
    draws.push_back(theta);
  }
  r.draws = Draws::independent(draws);
  r.info = {{"gp", gp.describe()},
            {"signal_variance", h.signal_variance},
            {"noise_variance_standardised", h.noise_variance},
            {"log_marginal_likelihood", model->log_marginal_likelihood()},
            {"draws", "stratified normal quantiles z_s = Phi^-1((s + 1/2) / S) of the exact posterior N(m(x), v(x))"}};
  return r;
}

const bool registered_nngp = register_method({
    .name = "nngp",
    .summary = "exact Gaussian-process regression with the network's infinite-width (NNGP) kernel",
    .reference = "Lee et al. 2018",
    .family = MethodFamily::GaussianProcess,
    .groups = {&detail::samples_options().group(), &nngp_options().group()},
    .run = &run_nngp,
    .kept_draws = [](const nlohmann::json& settings) { return approximation_draws(detail::samples_options().read(settings).num_samples); },
    // Nothing to keep: the fit is two variances on one eigendecomposition (seconds at the row limit),
    // and a resumed run (uqnn fit --resume) recomputes it bitwise.
    .checkpoints = true,
    .handles_classification = false,
    .external_model_refusal = "it is the infinite-width Gaussian process of uqnn's MLP architecture (its NNGP kernel), which a module has no counterpart of",
    // The GP fits its noise variance by the marginal likelihood and its own prior: the demo's
    // fixed noise and fan-in prior do not apply.
    .demo_preset = {{"noise", nullptr}, {"prior", "gaussian"}}});

}  // namespace

}  // namespace uqnn

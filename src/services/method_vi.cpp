// `uqnn fit --method vi`: Bayes by Backprop (seed 001).
#include "approx_common.hpp"
#include "uqnn/approx/vi.hpp"

namespace uqnn {

namespace detail {

ViResult fit_vi(const FitContext& c, std::shared_ptr<const Prior>& prior) {
  const ViOptions o = vi_options().read(c.config.method_settings);
  const Posterior& post = *c.posterior;
  if (o.vi_prior == "mixture")
    prior = std::make_shared<ScaleMixturePrior>(post.model().num_params(), o.vi_pi, o.vi_sigma1, o.vi_sigma2);
  else if (o.vi_prior == "model")
    prior = post.prior_ptr();
  else
    throw InputError("--vi-prior '" + o.vi_prior + "' is not known: valid are mixture, model");
  ViParams p;
  p.epochs = c.config.training.epochs;
  p.learning_rate = c.config.training.optimizer.learning_rate;
  p.batch_size = c.config.training.batch_size;
  p.schedule = c.config.training.schedule;
  p.num_samples = o.vi_samples;
  p.mu_init_lower = -o.vi_mu_init;
  p.mu_init_upper = o.vi_mu_init;
  p.rho_init_lower = o.vi_rho_init_lower;
  p.rho_init_upper = o.vi_rho_init_upper;
  p.analytic_kl = o.vi_kl == "analytic";
  Rng rng(c.config.seed, 0);
  const auto progress = epoch_progress(c, p.epochs, "vi");
  return fit_bayes_by_backprop(post, *prior, p, rng, [&progress](Index e, double elbo) {
    return progress ? progress(e, -elbo, std::nan("")) : true;
  });
}

}  // namespace detail

MethodResult run_vi(const FitContext& c) {
  std::shared_ptr<const Prior> prior;
  const ViResult fit = detail::fit_vi(c, prior);
  Rng sampler(c.config.seed, 1);
  MethodResult r;
  r.draws = fit.approximation->sample(sampler, detail::num_samples(c));
  std::vector<double> negative;
  for (double e : fit.elbo) negative.push_back(-e);
  r.history = {{"-ELBO (KL + NLL, per-epoch estimate)", negative}};
  r.history_label = "-ELBO";
  r.info = {{"final_elbo", fit.elbo.back()}, {"analytic_kl", fit.analytic_kl}, {"prior", prior->to_json()},
            {"mean_sigma", fit.approximation->sd().mean()}};
  return r;
}

namespace {
const bool registered = register_method({"vi", "variational inference: Bayes by Backprop, mean-field Gaussian", "QUiNN's manual; Blundell et al. 2015", {&detail::samples_options().group(), &detail::vi_options().group()}, {}, &run_vi});
}  // namespace

}  // namespace uqnn

// `uqnn fit --method dropout`: MC dropout on an Mlp (draws = Mlp parameters with one mask each).
#include "approx_common.hpp"
#include "uqnn/approx/dropout.hpp"

namespace uqnn {

MethodResult run_dropout(const FitContext& c) {
  const ApproxOptions o = detail::approx_options(c);
  detail::check_samples(o);
  const auto* mlp = dynamic_cast<const Mlp*>(&c.posterior->model());
  if (!mlp) throw InputError("--method dropout needs --model mlp");
  auto model = std::make_shared<const DropoutMlp>(mlp->spec(), o.dropout_p);
  DropoutObjective objective(model, c.posterior, c.config.seed, 2);
  Rng rng(c.config.seed, 0);
  const auto& post = c.posterior;
  const Mat Xv = c.validation_inputs, Yv = c.validation_targets;
  const auto validation = [&post, Xv, Yv](const Vec& theta) {  // the mean network's NLL per point
    return -post->log_likelihood(theta, Xv, Yv) / static_cast<double>(Xv.cols());
  };
  const TrainResult trained = train(objective, post->initial_point(rng), c.config.training, rng, validation,
                                    epoch_progress(c.config.progress && progress_wanted(), c.config.training.epochs, "dropout"));
  DropoutPosterior q(model, trained.best_theta);
  Rng sampler(c.config.seed, 1);
  MethodResult r;
  r.draws = q.sample(sampler, o.num_samples);
  r.history = {{"training loss with dropout (-log posterior / N)", trained.history.train_loss}};
  r.info = {{"dropout_p", o.dropout_p}, {"best_epoch", trained.best_epoch}};
  return r;
}

}  // namespace uqnn

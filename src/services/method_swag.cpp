// `uqnn fit --method swag`: MAP pre-training, then SWAG (seed 001) on the same loss.
#include "approx_common.hpp"
#include "uqnn/approx/swag.hpp"

namespace uqnn {

MethodResult run_swag(const FitContext& c) {
  const ApproxOptions o = detail::approx_options(c);
  detail::check_samples(o);
  SwagParams p;
  p.steps = o.swag_steps;
  p.snapshot_every = o.swag_every;
  p.rank = o.swag_rank;
  if (o.swag_cov != "lowrank" && o.swag_cov != "diag") throw InputError("--swag-cov '" + o.swag_cov + "' is not known: valid are lowrank, diag");
  p.low_rank = o.swag_cov == "lowrank";
  p.learning_rate = o.swag_lr;
  p.momentum = o.swag_momentum;
  p.batch_size = c.config.training.batch_size;
  p.validate();
  Rng rng(c.config.seed, 0);
  const TrainResult trained = train_map(c, c.posterior->initial_point(rng), rng);
  NegativeLogPosteriorObjective objective(c.posterior);
  const SwagResult swag = fit_swag(objective, trained.best_theta, p, rng);
  Rng sampler(c.config.seed, 1);
  MethodResult r;
  r.draws = swag.approximation->sample(sampler, o.num_samples);
  r.history = {{"pre-training loss (-log posterior / N)", trained.history.train_loss}};
  r.info = {{"snapshots", swag.num_snapshots}, {"clamped_negative_variances", swag.num_clamped_variances},
            {"deviation_columns", swag.approximation->deviations().cols()}, {"swag_lr", p.learning_rate}};
  return r;
}

}  // namespace uqnn

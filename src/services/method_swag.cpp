// `uqnn fit --method swag`: J members (QUiNN's NN_SWAG is an ensemble: MultiSWAG), each a MAP
// pre-training from its own initialisation followed by SWAG (seed 001) on the same loss.
#include "approx_common.hpp"
#include "uqnn/approx/swag.hpp"

namespace uqnn {

namespace {
struct SwagMember {
  std::shared_ptr<const SwagPosterior> approximation;
  TrainResult pretraining;
  SwagResult swag;
  double learning_rate = 0.0;
};
}  // namespace

MethodResult run_swag(const FitContext& c) {
  const ApproxOptions o = detail::approx_options(c);
  detail::check_samples(o);
  if (o.swag_members < 1) throw InputError(fmt::format("--swag-members {} is invalid: it must be >= 1", o.swag_members));
  if (o.swag_lr < 0) throw InputError(fmt::format("--swag-lr {} is invalid: it must be > 0, or 0 for the curvature rule", o.swag_lr));
  if (o.swag_cov != "lowrank" && o.swag_cov != "diag") throw InputError("--swag-cov '" + o.swag_cov + "' is not known: valid are lowrank, diag");
  SwagParams p;
  p.steps = o.swag_steps;
  p.snapshot_every = o.swag_every;
  p.rank = o.swag_rank;
  p.low_rank = o.swag_cov == "lowrank";
  p.momentum = o.swag_momentum;
  p.batch_size = c.config.training.batch_size;
  if (o.swag_lr > 0) p.learning_rate = o.swag_lr;
  p.validate();
  // Member j draws its initialisation, training minibatches and SGD minibatches from stream 2j only,
  // so the result does not depend on the thread count (stream 0 is the single-member run of before).
  const auto fit_member = [&](Index j) {
    Rng rng(c.config.seed, static_cast<std::uint64_t>(2 * j));
    SwagMember m;
    m.pretraining = train_map(c, c.posterior->initial_point(rng), rng);
    SwagParams member_params = p;
    if (o.swag_lr == 0)
      member_params.learning_rate = swag_default_learning_rate(*c.posterior, m.pretraining.best_theta, c.posterior->num_data());
    m.learning_rate = member_params.learning_rate;
    NegativeLogPosteriorObjective objective(c.posterior);
    m.swag = fit_swag(objective, m.pretraining.best_theta, member_params, rng);
    m.approximation = m.swag.approximation;
    return m;
  };
  const std::vector<SwagMember> members = run_members<SwagMember>(o.swag_members, o.threads, fit_member);

  std::vector<std::shared_ptr<const ApproximatePosterior>> components;
  for (const SwagMember& m : members) components.push_back(m.approximation);
  const MixturePosterior mixture(components);
  Rng sampler(c.config.seed, 1);
  MethodResult r;
  r.draws = mixture.sample(sampler, o.num_samples);
  const Index J = static_cast<Index>(members.size());
  for (Index s = 0; s < static_cast<Index>(r.draws.size()); ++s) r.chain_of_draw.push_back(s % J);  // MixturePosterior's stratification
  nlohmann::json learning_rates = nlohmann::json::array(), snapshots = nlohmann::json::array();
  Index clamped = 0;
  for (std::size_t j = 0; j < members.size(); ++j) {
    if (j < 8) r.history.emplace_back(fmt::format("member {} pre-training loss (-log posterior / N)", j), members[j].pretraining.history.train_loss);
    learning_rates.push_back(members[j].learning_rate);
    snapshots.push_back(members[j].swag.num_snapshots);
    clamped += members[j].swag.num_clamped_variances;
  }
  r.info = {{"members", J},
            {"snapshots", snapshots},
            {"clamped_negative_variances", clamped},
            {"deviation_columns", members.front().approximation->deviations().cols()},
            {"swag_lr", learning_rates},
            {"swag_lr_rule", o.swag_lr > 0 ? "given" : "1 / largest eigenvalue of the Hessian of -log posterior / N at each member's MAP"}};
  return r;
}

}  // namespace uqnn

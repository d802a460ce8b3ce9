#include "uqnn/predictive/thompson_sampling.hpp"

#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "uqnn/approx/vi.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/core/stop_signal.hpp"
#include "uqnn/mcmc/sgmcmc/sgld.hpp"
#include "uqnn/nn/mlp.hpp"
#include "uqnn/optim/gaussian_process_fit.hpp"
#include "uqnn/optim/optimizer.hpp"
#include "uqnn/prob/functional_prior.hpp"
#include "uqnn/prob/likelihood.hpp"
#include "uqnn/prob/posterior.hpp"

namespace uqnn {

ReplayBuffer::ReplayBuffer(Index input_dim, Index capacity) : inputs_(input_dim, capacity), rewards_(1, capacity) {
  require(input_dim >= 1, "replay buffer input_dim", ">= 1");
  require(capacity >= 1, "replay buffer capacity", ">= 1");
}

void ReplayBuffer::add(const Vec& input, double reward) {
  if (input.size() != inputs_.rows())
    throw std::invalid_argument(fmt::format("replay buffer: input has {} entries, expected {}", input.size(), inputs_.rows()));
  inputs_.col(next_) = input;
  rewards_(0, next_) = reward;
  next_ = (next_ + 1) % capacity();
  size_ = std::min(size_ + 1, capacity());
}

IndexVec ReplayBuffer::sample(Rng& rng, Index n) const {
  // Partial Fisher-Yates: the first min(n, size) entries of a uniformly random permutation.
  IndexVec slots(static_cast<std::size_t>(size_));
  for (Index i = 0; i < size_; ++i) slots[static_cast<std::size_t>(i)] = i;
  const Index m = std::min(n, size_);
  for (Index i = 0; i < m; ++i) {
    const auto j = static_cast<std::size_t>(i) + rng.uniform_index(static_cast<std::uint64_t>(size_ - i));
    std::swap(slots[static_cast<std::size_t>(i)], slots[j]);
  }
  slots.resize(static_cast<std::size_t>(m));
  return slots;
}

Mat ReplayBuffer::inputs(const IndexVec& slots) const { return gather_columns(inputs_, slots); }

Mat ReplayBuffer::rewards(const IndexVec& slots) const { return gather_columns(rewards_, slots); }

void BanditAgentParams::validate() const {
  if (!bandit_agent_kinds().contains(kind))
    throw std::invalid_argument(fmt::format("bandit agent '{}' is unknown; valid: {}", kind, fmt::join(bandit_agent_kinds().names(), ", ")));
  require(noise_sd > 0 && std::isfinite(noise_sd), "bandit noise_sd", "> 0");
  require(reward_scale > 0 && std::isfinite(reward_scale), "bandit reward_scale", "> 0");
  require(batch_size >= 1, "bandit batch_size", ">= 1");
  require(sg_step_size > 0 && std::isfinite(sg_step_size), "bandit sg_step_size", "> 0");
  require(adam_learning_rate > 0 && std::isfinite(adam_learning_rate), "bandit adam_learning_rate", "> 0");
  require(decay_factor > 0 && decay_factor <= 1, "bandit decay_factor", "in (0, 1]");
  require(decay_every >= 1, "bandit decay_every", ">= 1");
  require(members >= 1, "bandit members", ">= 1");
  require(measurement_points >= 1, "bandit measurement_points", ">= 1");
  require(gp_jitter >= 0, "bandit gp_jitter", ">= 0");
}

void BanditRunParams::validate() const {
  require(rounds >= 1, "bandit rounds", ">= 1");
  require(updates_per_round >= 0, "bandit updates_per_round", ">= 0");
  require(buffer_capacity >= 1, "bandit buffer_capacity", ">= 1");
}

namespace {

/// What every agent needs: the network, the reward likelihood and the minibatch estimate of the
/// log likelihood (N / n) sum_b log N(y_i | f(x_i; theta), sigma^2) with its gradient.
class BanditAgentBase : public BanditAgent {
 public:
  BanditAgentBase(std::shared_ptr<const Model> model, std::shared_ptr<const Prior> prior, const BanditAgentParams& params)
      : model_(std::move(model)), prior_(std::move(prior)), likelihood_(make_gaussian_likelihood(params.noise_sd)), params_(params) {
    if (model_->output_dim() != 1)
      throw std::invalid_argument(fmt::format("bandit: the network must have one output (the reward), it has {}", model_->output_dim()));
    if (prior_->dim() != model_->num_params())
      throw std::invalid_argument(fmt::format("bandit: prior has dimension {}, the network {}", prior_->dim(), model_->num_params()));
  }
  Index divergences() const override { return divergences_; }

 protected:
  /// A minibatch of the buffer, and the factor N / n that scales its log likelihood to the buffer.
  struct Minibatch {
    Mat inputs, rewards;
    double scale = 1.0;
  };
  Minibatch next_minibatch(Rng& rng, const ReplayBuffer& buffer) const {
    const IndexVec slots = buffer.sample(rng, params_.batch_size);
    return {buffer.inputs(slots), buffer.rewards(slots) / params_.reward_scale,
            static_cast<double>(buffer.size()) / static_cast<double>(slots.size())};
  }
  /// scale * sum log N(y | f(x; theta), sigma^2); its gradient is added to `grad`.
  double log_likelihood(const Vec& theta, const Minibatch& batch, Vec& grad) const {
    const Vec no_extra(0);
    const OutputLoss<double> loss = [&](const Mat& Y, Mat& dY) {
      const double value = likelihood_->log_likelihood(Y, batch.rewards, no_extra, &dY, nullptr);
      dY *= batch.scale;
      return value;
    };
    return batch.scale * model_->value_and_gradient(theta, batch.inputs, loss, grad);
  }
  /// Counts a non-finite gradient or step; true when `v` is finite.
  bool finite(const Vec& v) {
    if (v.allFinite()) return true;
    ++divergences_;
    return false;
  }

  std::shared_ptr<const Model> model_;
  std::shared_ptr<const Prior> prior_;
  std::shared_ptr<const Likelihood> likelihood_;
  BanditAgentParams params_;
  Index divergences_ = 0;
};

/// sgld and fsgld: w += eps grad log p~(w) + sqrt(2 eps) xi, eps = eta_t / capacity (file comment of the header).
class LangevinAgent final : public BanditAgentBase {
 public:
  LangevinAgent(std::shared_ptr<const Model> model, std::shared_ptr<const Prior> prior, const BanditAgentParams& params,
                Rng& rng, const GaussianProcess* process)
      : BanditAgentBase(std::move(model), std::move(prior), params), position_(model_->initial_params(rng)) {
    if (params.kind == "fsgld") {
      if (!process) throw std::invalid_argument("bandit: fsgld needs a GP functional prior");
      // The buffer holds the same (mushroom, action) input many times, so X_M has repeated points and
      // K alone is singular: its noise variance on the diagonal bounds K^-1 (prob/functional_prior.hpp).
      functional_prior_ = std::make_unique<FunctionalPrior>(model_, *process, params.gp_jitter, /*include_noise=*/true);
    }
  }
  Vec thompson_draw(Rng& /*rng*/) override { return position_; }
  void learn(Rng& rng, const ReplayBuffer& buffer, Index round) override {
    if (buffer.size() == 0) return;
    const Minibatch batch = next_minibatch(rng, buffer);
    Vec grad = Vec::Zero(position_.size());
    log_likelihood(position_, batch, grad);
    if (functional_prior_) {
      // log P0(f(X_M; w)) at measurement points drawn from the buffer (seed 002 eq. 6), drawn after the batch.
      const Mat points = buffer.inputs(buffer.sample(rng, params_.measurement_points));
      functional_prior_->log_density(position_, points, &grad);
    }
    if (!functional_prior_ || params_.fsgld_weight_prior) prior_->log_density(position_, &grad);
    const double eta = params_.sg_step_size * std::pow(params_.decay_factor, static_cast<double>(round / params_.decay_every));
    const double eps = eta / static_cast<double>(buffer.capacity());
    if (!finite(grad)) return;
    Vec next = sgmcmc::sgld_step(rng, position_, grad, eps);
    if (!finite(next)) return;  // a step that overflows is a divergence too; the chain stays put
    position_ = std::move(next);
  }

 private:
  Vec position_;
  std::unique_ptr<FunctionalPrior> functional_prior_;
};

/// vi: Bayes by Backprop, one Adam step on (mu, rho) per minibatch.
class VariationalAgent final : public BanditAgentBase {
 public:
  VariationalAgent(std::shared_ptr<const Model> model, std::shared_ptr<const Prior> prior, const BanditAgentParams& params, Rng& rng)
      : BanditAgentBase(std::move(model), std::move(prior), params) {
    const ViParams defaults;
    mu_ = model_->initial_params(rng);
    rho_.resize(mu_.size());
    for (Index k = 0; k < rho_.size(); ++k) rho_[k] = rng.uniform(defaults.rho_init_lower, defaults.rho_init_upper);
    OptimizerParams adam;
    adam.learning_rate = params.adam_learning_rate;
    optimizer_ = make_optimizer(adam, 2 * mu_.size());
    analytic_kl_ = dynamic_cast<const GaussianPrior*>(prior_.get()) != nullptr;
  }
  Vec thompson_draw(Rng& rng) override {
    Vec w(mu_.size());
    for (Index k = 0; k < w.size(); ++k) w[k] = mu_[k] + softplus(rho_[k]) * rng.normal();
    return w;
  }
  void learn(Rng& rng, const ReplayBuffer& buffer, Index /*round*/) override {
    if (buffer.size() == 0) return;
    const Minibatch batch = next_minibatch(rng, buffer);
    const BayesByBackpropGradient g = bayes_by_backprop_gradient(
        // The log likelihood is scaled to the buffer (N / n), so the KL keeps its full weight: an
        // unbiased estimate of the buffer's negative ELBO (Blundell et al.'s eq. 8 with pi_i = n / N
        // on an unscaled minibatch is the same objective divided by N / n).
        mu_, rho_, *prior_, *likelihood_, analytic_kl_, 1, 1.0,
        [&](const Vec& w, Vec& grad) { return log_likelihood(w, batch, grad); }, rng);
    Vec phi(2 * mu_.size()), grad(2 * mu_.size());
    phi << mu_, rho_;
    // Adam on the loss per buffer tuple, so that its step does not depend on N.
    grad << g.g_mu, g.g_rho;
    grad /= static_cast<double>(buffer.size());
    if (!finite(grad)) return;
    optimizer_->step(phi, grad, params_.adam_learning_rate);
    mu_ = phi.head(mu_.size());
    rho_ = phi.tail(mu_.size());
  }

 private:
  Vec mu_, rho_;
  std::unique_ptr<Optimizer> optimizer_;
  bool analytic_kl_ = false;
};

/// ens (members > 1, Thompson draw = a random member) and map (one member, its point estimate):
/// each member takes one Adam step on -(1 / N) log p~ per learn(), on its own minibatch.
class EnsembleAgent final : public BanditAgentBase {
 public:
  EnsembleAgent(std::shared_ptr<const Model> model, std::shared_ptr<const Prior> prior, const BanditAgentParams& params,
                Rng& rng, Index members)
      : BanditAgentBase(std::move(model), std::move(prior), params) {
    OptimizerParams adam;
    adam.learning_rate = params.adam_learning_rate;
    for (Index m = 0; m < members; ++m) {
      members_.push_back(model_->initial_params(rng));
      optimizers_.push_back(make_optimizer(adam, members_.back().size()));
    }
  }
  Vec thompson_draw(Rng& rng) override {
    if (members_.size() == 1) return members_.front();
    return members_[rng.uniform_index(members_.size())];
  }
  void learn(Rng& rng, const ReplayBuffer& buffer, Index /*round*/) override {
    if (buffer.size() == 0) return;
    for (std::size_t m = 0; m < members_.size(); ++m) {
      const Minibatch batch = next_minibatch(rng, buffer);
      Vec grad = Vec::Zero(members_[m].size());
      log_likelihood(members_[m], batch, grad);
      prior_->log_density(members_[m], &grad);
      grad /= -static_cast<double>(buffer.size());
      if (!finite(grad)) continue;
      optimizers_[m]->step(members_[m], grad, params_.adam_learning_rate);
    }
  }

 private:
  std::vector<Vec> members_;
  std::vector<std::unique_ptr<Optimizer>> optimizers_;
};

}  // namespace

const Registry<BanditAgentKind>& bandit_agent_kinds() {
  using M = std::shared_ptr<const Model>;
  using P = std::shared_ptr<const Prior>;
  using A = std::unique_ptr<BanditAgent>;
  const auto langevin = [](M m, P p, const BanditAgentParams& a, Rng& rng, const GaussianProcess* gp) -> A {
    return std::make_unique<LangevinAgent>(std::move(m), std::move(p), a, rng, gp);
  };
  static const Registry<BanditAgentKind> kinds(
      "bandit agent",
      {{.name = "fsgld", .summary = "functional SGLD under a pre-trained GP prior (Wu et al.)", .needs_functional_prior = true, .make = langevin},
       {.name = "sgld", .summary = "SGLD on the weights (Welling & Teh 2011)", .make = langevin},
       {.name = "vi", .summary = "Bayes by Backprop (Blundell et al. 2015)",
        .make = [](M m, P p, const BanditAgentParams& a, Rng& rng, const GaussianProcess*) -> A {
          return std::make_unique<VariationalAgent>(std::move(m), std::move(p), a, rng);
        }},
       {.name = "ens", .summary = "a bootstrap-free deep ensemble, one member drawn per round",
        .make = [](M m, P p, const BanditAgentParams& a, Rng& rng, const GaussianProcess*) -> A {
          return std::make_unique<EnsembleAgent>(std::move(m), std::move(p), a, rng, a.members);
        }},
       {.name = "map", .summary = "greedy: one network trained by Adam",
        .make = [](M m, P p, const BanditAgentParams& a, Rng& rng, const GaussianProcess*) -> A {
          return std::make_unique<EnsembleAgent>(std::move(m), std::move(p), a, rng, 1);
        }}});
  return kinds;
}

std::unique_ptr<BanditAgent> make_bandit_agent(std::shared_ptr<const Model> model, std::shared_ptr<const Prior> prior,
                                               const BanditAgentParams& params, Rng& rng, const GaussianProcess* functional_prior) {
  params.validate();
  return bandit_agent_kinds().find(params.kind).make(std::move(model), std::move(prior), params, rng, functional_prior);
}

double MushroomBandit::reward(Index m, int action, Rng& rng) const {
  if (action == kReject) return 0.0;
  if (edible[static_cast<std::size_t>(m)]) return 5.0;
  return rng.uniform() < poison_probability ? -35.0 : 5.0;
}

double MushroomBandit::expected_regret(Index m, int action) const {
  const bool is_edible = edible[static_cast<std::size_t>(m)];
  if (action == kReject) return is_edible ? 5.0 : 0.0;
  return is_edible ? 0.0 : 40.0 * poison_probability - 5.0;
}

Vec MushroomBandit::input(Index m, int action) const {
  Vec x = Vec::Zero(num_features() + 2);
  x.head(num_features()) = contexts.col(m);
  x[num_features() + action] = 1.0;
  return x;
}

BanditTrace run_thompson_bandit(const MushroomBandit& bandit, const Model& model, BanditAgent& agent,
                                const BanditRunParams& params, Rng& rng) {
  params.validate();
  if (bandit.contexts.cols() == 0 || static_cast<Index>(bandit.edible.size()) != bandit.contexts.cols())
    throw std::invalid_argument("bandit: needs one edible flag per context, and at least one context");
  require(bandit.poison_probability >= 0 && bandit.poison_probability <= 1, "bandit poison_probability", "in [0, 1]");
  if (model.input_dim() != bandit.num_features() + 2)
    throw std::invalid_argument(fmt::format("bandit: the network takes {} inputs, the context and action need {}", model.input_dim(),
                                            bandit.num_features() + 2));
  ReplayBuffer buffer(model.input_dim(), params.buffer_capacity);
  BanditTrace trace;
  double regret = 0.0, reward_sum = 0.0;
  Mat both(model.input_dim(), 2);
  for (Index t = 0; t < params.rounds; ++t) {
    const Index m = static_cast<Index>(rng.uniform_index(static_cast<std::uint64_t>(bandit.contexts.cols())));
    both.col(0) = bandit.input(m, MushroomBandit::kEat);
    both.col(1) = bandit.input(m, MushroomBandit::kReject);
    const Mat predicted = model.forward(agent.thompson_draw(rng), both);
    // Ties (and NaN) reject: the cautious action.
    const int action = predicted(0, 0) > predicted(0, 1) ? MushroomBandit::kEat : MushroomBandit::kReject;
    const double r = bandit.reward(m, action, rng);
    buffer.add(both.col(action), r);
    regret += bandit.expected_regret(m, action);
    reward_sum += r;
    trace.cumulative_regret.push_back(regret);
    trace.cumulative_reward.push_back(reward_sum);
    trace.actions.push_back(action);
    if (action == MushroomBandit::kEat && !bandit.edible[static_cast<std::size_t>(m)]) ++trace.eaten_poisonous;
    if (action == MushroomBandit::kReject && bandit.edible[static_cast<std::size_t>(m)]) ++trace.rejected_edible;
    for (Index u = 0; u < params.updates_per_round; ++u) agent.learn(rng, buffer, t);
    if (stop_requested()) {
      trace.interrupted = true;
      break;
    }
  }
  trace.divergences = agent.divergences();
  trace.final_parameter_norm = agent.thompson_draw(rng).norm();
  return trace;
}

namespace {

/// The GP prior's hyperparameters, fitted to tuples of uniformly random play.
GaussianProcess pretrain_bandit_gp(const MushroomBandit& bandit, Index count, double reward_scale, Rng& rng) {
  Mat X(bandit.num_features() + 2, count);
  Vec y(count);
  for (Index i = 0; i < count; ++i) {
    const Index m = static_cast<Index>(rng.uniform_index(static_cast<std::uint64_t>(bandit.contexts.cols())));
    const int action = rng.uniform() < 0.5 ? MushroomBandit::kEat : MushroomBandit::kReject;
    X.col(i) = bandit.input(m, action);
    y[i] = bandit.reward(m, action, rng) / reward_scale;
  }
  GpFitParams fit;
  fit.iterations = 100;
  fit.max_points = count;
  return fit_gaussian_process(X, y, fit, rng);
}

}  // namespace

BanditTrace run_bandit_experiment(const MushroomBandit& bandit, const BanditExperiment& experiment) {
  experiment.agent.validate();
  experiment.run.validate();
  require(experiment.gp_pretraining_tuples >= 2, "bandit gp_pretraining_tuples", ">= 2");
  for (Index width : experiment.hidden) require(width >= 1, "bandit hidden layer width", ">= 1");
  Rng rng(experiment.seed);
  auto model = std::make_shared<Mlp>(MlpSpec{bandit.num_features() + 2, experiment.hidden, 1, Activation::Relu, InitScheme::He});
  auto prior = GaussianPrior::fan_in_scaled(model->layout(), 1.0);
  std::optional<GaussianProcess> gp;
  if (bandit_agent_kinds().find(experiment.agent.kind).needs_functional_prior) {
    Rng gp_rng(experiment.seed ^ 0x9e3779b97f4a7c15ULL);  // its own stream: the agents' runs stay comparable
    gp = pretrain_bandit_gp(bandit, experiment.gp_pretraining_tuples, experiment.agent.reward_scale, gp_rng);
  }
  auto agent = make_bandit_agent(model, prior, experiment.agent, rng, gp ? &*gp : nullptr);
  BanditTrace trace = run_thompson_bandit(bandit, *model, *agent, experiment.run, rng);
  if (gp) trace.agent_prior = gp->describe() + (experiment.agent.fsgld_weight_prior ? " plus the weight prior N(0, 1 / fan_in)" : "");
  return trace;
}

}  // namespace uqnn

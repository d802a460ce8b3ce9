#pragma once
/// @file Thompson sampling for contextual bandits with online Bayesian neural networks: a replay
/// buffer, agents that take one gradient step at a time on it, and the Mushroom bandit.
///
/// Thompson sampling (Thompson 1933; Russo & Van Roy 2016): at every round the agent draws one
/// network theta from its current posterior (or approximation), plays the action with the largest
/// predicted reward f([context; one-hot(action)]; theta), observes the reward, adds the tuple to its
/// buffer and refreshes its posterior. Following Blundell et al. (2015, sec. 5.3) and seed 002
/// (sec. 5.4, App. E), the network sees the context and the action as inputs and predicts the reward,
/// y / reward_scale ~ N(f(x; theta), noise_sd^2); training uses the last `capacity` tuples, minibatches of
/// `batch_size`, and `updates_per_round` gradient steps per round.
///
/// Every agent's step is an unbiased minibatch estimate on the buffer (N tuples, minibatch b of n):
///   log p~(theta) = (N / n) sum_{i in b} log N(y_i | f(x_i; theta), noise_sd^2) + log p(theta).
/// - sgld: w += eps grad log p~ + sqrt(2 eps) xi (Welling & Teh 2011 in seed 002's convention) with
///   eps = eta / capacity: eta is a learning rate on the mean loss over a full buffer. (eps = eta / N
///   would take steps of order eta in the first rounds, where a functional prior leaves most weight
///   directions unconstrained: fsgld's weights then blew up within the first round.) The Thompson
///   draw is the chain's current state.
/// - fsgld: the same with the GP functional prior log P0(f(X_M; theta)) at measurement points X_M
///   drawn from the buffer at every step (seed 002 eq. 6), by default beside the weight prior
///   log p(theta) rather than instead of it (`fsgld_weight_prior`). Eq. 6 alone leaves every weight
///   direction that does not move f at the data or at X_M without a restoring force, so over the
///   bandit's 640,000 steps those weights random-walk (norm 20 -> 140 in 3000 rounds) and the agent
///   plays like SGLD with no prior at all (docs/contextual-bandit.md has the runs).
/// - vi: Bayes by Backprop (approx/vi.hpp's step) on the buffer's negative ELBO, KL(q || p) minus the
///   minibatch log likelihood scaled by N / n at one reparameterised draw w ~ q per step; the
///   Thompson draw is w = mu + softplus(rho) eps.
/// - ens: M networks trained by Adam on their own minibatches from their own random starts; the
///   draw is a uniformly chosen member (ensemble sampling, Lu & Van Roy 2017).
/// - map: one network trained by Adam; it plays the action its point estimate prefers (greedy).
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "uqnn/core/registry.hpp"
#include "uqnn/core/rng.hpp"
#include "uqnn/nn/model.hpp"
#include "uqnn/prob/gaussian_process.hpp"
#include "uqnn/prob/prior.hpp"

namespace uqnn {

/// The last `capacity` (input, reward) tuples, oldest overwritten first.
class ReplayBuffer {
 public:
  ReplayBuffer(Index input_dim, Index capacity);
  void add(const Vec& input, double reward);
  Index size() const { return size_; }
  Index capacity() const { return inputs_.cols(); }
  /// min(n, size()) distinct slots, uniformly at random.
  IndexVec sample(Rng& rng, Index n) const;
  /// The tuples at `slots`: inputs [input_dim, |slots|] and rewards [1, |slots|].
  Mat inputs(const IndexVec& slots) const;
  Mat rewards(const IndexVec& slots) const;

 private:
  Mat inputs_;   ///< [input_dim, capacity]
  Mat rewards_;  ///< [1, capacity]
  Index size_ = 0, next_ = 0;
};

/// Settings shared by the agents.
struct BanditAgentParams {
  std::string kind = "sgld";   ///< sgld | fsgld | vi | ens | map
  /// The network predicts reward / reward_scale, so that its prior (functions of order 1) covers
  /// the rewards: y / reward_scale ~ N(f, noise_sd^2). Default 20, the sd of the reward of eating a
  /// poisonous mushroom at p = 0.5 (40 sqrt(p (1 - p))). > 0.
  double reward_scale = 20.0;
  /// sigma of the reward model in units of reward_scale; default 0.25 (5 reward units: the
  /// reward of eating an edible mushroom). > 0.
  double noise_sd = 0.25;
  Index batch_size = 64;       ///< minibatch n (seed 002 App. E); >= 1
  /// sgld, fsgld: eta of the step eps = eta / capacity (seed 002 App. E: initial 1e-2, decay 0.9).
  double sg_step_size = 1e-2;
  /// vi, ens, map: Adam's learning rate (PyTorch's default).
  double adam_learning_rate = 1e-3;
  double decay_factor = 0.9;   ///< sgld, fsgld: eta *= decay_factor every decay_every rounds; in (0, 1]
  Index decay_every = 1000;    ///< rounds (the paper gives no period); >= 1
  Index members = 5;           ///< ens: networks (Lakshminarayanan et al. 2017); >= 1
  Index measurement_points = 40;  ///< fsgld: buffer inputs per X_M (seed 002 sec. 5.1); >= 1
  double gp_jitter = 1e-4;     ///< fsgld: relative jitter of the GP covariance
  /// fsgld: add the weight prior's log p(theta) to the functional prior's (see the file comment);
  /// false is seed 002's eq. 6 alone.
  bool fsgld_weight_prior = true;
  /// Throws std::invalid_argument naming the parameter and its valid range.
  void validate() const;
};

/// One Thompson-sampling agent (see the file comment for each kind).
class BanditAgent {
 public:
  virtual ~BanditAgent() = default;
  /// The network parameters that choose this round's action.
  virtual Vec thompson_draw(Rng& rng) = 0;
  /// One gradient step on a minibatch of `buffer` (no-op on an empty buffer). `round` (0-based)
  /// sets the step-size decay.
  virtual void learn(Rng& rng, const ReplayBuffer& buffer, Index round) = 0;
  /// Number of non-finite gradients or steps met so far (each left the state unchanged).
  virtual Index divergences() const = 0;
};

/// A kind of agent (`params.kind`, Python's `uqnn.thompson_bandit(agent=...)`).
struct BanditAgentKind {
  std::string name = {};
  std::string summary = {};
  bool needs_functional_prior = false;  ///< fsgld: the GP over f, pre-trained on random tuples
  std::function<std::unique_ptr<BanditAgent>(std::shared_ptr<const Model>, std::shared_ptr<const Prior>, const BanditAgentParams&,
                                             Rng&, const GaussianProcess*)>
      make = nullptr;
};
const Registry<BanditAgentKind>& bandit_agent_kinds();

/// An agent of `params.kind` for `model` (one output: the predicted reward) with weight prior
/// `prior` (sgld, fsgld unless fsgld_weight_prior is off, vi, ens, map; ens and map use it as
/// weight decay). fsgld needs `functional_prior`
/// (the GP over f), the others ignore it. The starting weights are drawn from `rng`
/// (model.initial_params). Throws std::invalid_argument for an unknown kind or a missing GP.
std::unique_ptr<BanditAgent> make_bandit_agent(std::shared_ptr<const Model> model, std::shared_ptr<const Prior> prior,
                                               const BanditAgentParams& params, Rng& rng,
                                               const GaussianProcess* functional_prior = nullptr);

/// The Mushroom bandit of Blundell et al. (2015, sec. 5.3), as in seed 002 sec. 5.4: each round
/// shows one mushroom (drawn uniformly with replacement); eating an edible one rewards 5, eating a
/// poisonous one -35 with probability `poison_probability` and 5 otherwise; rejecting rewards 0.
struct MushroomBandit {
  Mat contexts;                     ///< [features, mushrooms]
  std::vector<bool> edible;
  double poison_probability = 0.5;  ///< in [0, 1]

  static constexpr int kEat = 0, kReject = 1;
  Index num_features() const { return contexts.rows(); }
  /// The reward of `action` on mushroom `m`, drawn from `rng` when it is random.
  double reward(Index m, int action, Rng& rng) const;
  /// The expected regret of `action` against the oracle (eat exactly the edible ones):
  /// rejecting an edible mushroom 5, eating a poisonous one 0 - (-35 p + 5 (1 - p)) = 40 p - 5, else 0.
  double expected_regret(Index m, int action) const;
  /// [context; one-hot(action)]: the network's input.
  Vec input(Index m, int action) const;
};

/// Settings of one bandit run.
struct BanditRunParams {
  Index rounds = 10000;           ///< seed 002 sec. 5.4
  Index updates_per_round = 64;   ///< seed 002 App. E ("training frequency of 64")
  Index buffer_capacity = 4096;   ///< seed 002 App. E ("the last 4096 input-output tuples")
  void validate() const;
};

/// What one run did, round by round.
struct BanditTrace {
  std::string agent_prior;  ///< fsgld: the fitted GP prior (GaussianProcess::describe()); else empty
  std::vector<double> cumulative_regret;  ///< expected regret summed over rounds 0..t
  std::vector<double> cumulative_reward;  ///< rewards received, summed
  std::vector<int> actions;
  Index eaten_poisonous = 0, rejected_edible = 0;
  Index divergences = 0;
  /// |theta| of a Thompson draw after the last round: how far the weights went from their start
  /// (a functional prior leaves most weight directions free, and fsgld's weights random-walk).
  double final_parameter_norm = 0.0;
  bool interrupted = false;  ///< a stop signal ended the run early (core/stop_signal.hpp)
};

/// Plays `params.rounds` rounds of `bandit` with `agent`; within a round `rng` draws the mushroom,
/// the Thompson draw, the reward, then the agent's minibatches. A stop signal ends it after the round.
BanditTrace run_thompson_bandit(const MushroomBandit& bandit, const Model& model, BanditAgent& agent,
                                const BanditRunParams& params, Rng& rng);

/// Seed 002's bandit experiment (App. E) as one call: an input-hidden-1 relu network (He start),
/// the weight prior N(0, 1 / fan_in) per layer, and for fsgld an RBF GP prior fitted (100 Adam steps,
/// optim/gaussian_process_fit.hpp) to `gp_pretraining_tuples` tuples of uniformly random play drawn
/// before the run (seed 002: "pre-trained on 1000 randomly sampled points"); those tuples are in no
/// agent's buffer, and their rewards are in the network's units (reward / reward_scale).
struct BanditExperiment {
  BanditAgentParams agent;
  BanditRunParams run;
  std::vector<Index> hidden{100, 100};  ///< seed 002 App. E: input-100-100-output
  Index gp_pretraining_tuples = 1000;   ///< >= 2
  std::uint64_t seed = 1;
};

/// Runs `experiment` on `bandit`; the same seed gives the same trace.
BanditTrace run_bandit_experiment(const MushroomBandit& bandit, const BanditExperiment& experiment);

}  // namespace uqnn

#pragma once
/// @file Stochastic gradient Hamiltonian Monte Carlo (SGHMC) with friction: kernel and ChainSampler.
///
/// Discretisation exactly as written in seed 002 sec. 2.2 (eq. 2 with the friction and noise of
/// Chen et al. 2014), both updates using the state at time t (explicit Euler-Maruyama):
///     w_{t+1} = w_t + eps_t M^-1 z_t
///     z_{t+1} = z_t + eps_t g_t - eps_t C M^-1 z_t + sqrt(2 (C - B_hat) eps_t) eta_t,  eta_t ~ N(0, I)
/// with g_t = grad log p(w_t | D) (minibatch, N/n scaled; = -grad U~), friction C > 0, noise
/// estimate B_hat in [0, C] (default 0, as in seed 002 which writes sqrt(2 C eps)), diagonal mass
/// M (default I). The continuous dynamics leave p(w | D) N(z | 0, M) invariant when B_hat equals
/// the true gradient-noise term. Chen et al.'s Algorithm 2 instead takes g at the updated
/// position w_{t+1}; we follow the seed. Note that eps here is a time step: the position moves
/// ~eps per step, whereas SGLD's moves ~sqrt(2 eps); Chen et al.'s learning rate is eta = eps^2/M.
/// Momentum: drawn from N(0, M) at the first transition; redrawn at the start of every transition
/// when resample_momentum is set (seed 002 App. D Alg. 2 resamples before each block of m steps).
/// References: Chen, Fox & Guestrin (2014), "Stochastic gradient Hamiltonian Monte Carlo", ICML,
/// eqs. (13)-(15); seed 002 sec. 2.2 and App. D Alg. 2.
#include <memory>
#include <string>

#include "uqnn/mcmc/chain_sampler.hpp"
#include "uqnn/mcmc/sgmcmc/gradient_estimator.hpp"
#include "uqnn/mcmc/sgmcmc/step_size_schedule.hpp"
#include "uqnn/core/log_density.hpp"

namespace uqnn::sgmcmc {

/// Tuning of SGHMC.
struct SghmcParams {
  /// eps_t (default: constant 1e-3).
  StepSizeSchedule schedule = StepSizeSchedule::constant(1e-3);
  /// Friction C > 0. Per step the momentum decays by the factor 1 - eps C / M; validate() requires
  /// max_t eps_t * C / min(M) < 1. Default 10 (critical damping of a unit-mass coordinate with
  /// posterior sd s is C = 2 / s; tune it to the problem).
  double friction = 10.0;
  /// B_hat, the estimate of the gradient-noise term, in [0, friction]. Default 0.
  double noise_estimate = 0.0;
  /// Diagonal of the mass matrix M (entries > 0); empty = identity.
  Vec mass;
  /// Redraw z ~ N(0, M) at the start of every transition (default false: momentum persists).
  bool resample_momentum = false;
  /// Gradient steps per transition (m of seed 002 Alg. 2; default 1). Reported as n_leapfrog.
  Index num_steps = 1;
  /// Minibatch size n; 0 = full batch. See SgldParams::batch_size.
  Index batch_size = 0;
  /// lp__ reporting; see SgldParams::lp_every (the estimate is the one of the transition's last step).
  Index lp_every = 0;
  /// Throws std::invalid_argument naming the parameter and its valid range.
  void validate() const;
};

/// Position and momentum.
struct SghmcState {
  Vec position;
  Vec momentum;
};

/// One SGHMC step (formula in the file comment) with grad_log_density taken at state.position.
/// Draws dim normals from `rng` (none when B_hat == C).
SghmcState sghmc_step(Rng& rng, const SghmcState& state, const Vec& grad_log_density, double step_size,
                      const SghmcParams& params);

/// Draws z ~ N(0, M) (M = params.mass, identity when empty).
Vec sghmc_sample_momentum(Rng& rng, Index dim, const SghmcParams& params);

/// SGHMC for one chain. Draw statistics: lp as set by lp_every, accept_prob = 1, step_size = eps
/// of the transition's first step, n_leapfrog = num_steps, tree_depth = 0, energy = NaN. A
/// non-finite gradient stops the transition at the last finite state with is_divergent = true and
/// accept_prob = 0. No adaptation; the schedule's t counts gradient steps since init().
class SghmcSampler : public ChainSampler {
 public:
  SghmcSampler(std::shared_ptr<const LogDensity> density, SghmcParams params);

  void init(const Vec& position) override;
  DrawStats transition(Rng& rng, bool warmup) override;
  const Vec& position() const override { return state_.position; }
  Index dim() const override { return estimator_.dim(); }
  std::string describe() const override;
  void archive(StateArchive& archive) override;

  const Vec& momentum() const { return state_.momentum; }
  const SghmcParams& params() const { return params_; }
  Index iteration() const { return iteration_; }

 private:
  SghmcParams params_;
  GradientEstimator estimator_;
  SghmcState state_;
  Vec grad_;
  Index iteration_ = 0;
  Index transitions_ = 0;
  bool initialised_ = false;
  bool momentum_drawn_ = false;
};

}  // namespace uqnn::sgmcmc

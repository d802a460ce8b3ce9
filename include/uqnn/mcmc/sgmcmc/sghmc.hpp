#pragma once
/// @file Stochastic gradient Hamiltonian Monte Carlo (SGHMC) with friction: kernel and ChainSampler.
///
/// Discretisation of Chen et al. 2014 (eq. 15 and their Algorithm 2): the position moves with the
/// momentum at time t, the momentum with the gradient at the NEW position (symplectic Euler):
///     w_{t+1} = w_t + eps_t M^-1 z_t
///     z_{t+1} = z_t + eps_t g(w_{t+1}) - eps_t C M^-1 z_t + sqrt(2 (C - B_hat) eps_t) eta_t,  eta_t ~ N(0, I)
/// with g = grad log p(w | D) (minibatch, N/n scaled; = -grad U~), friction C > 0, noise estimate
/// B_hat in [0, C] (default 0, as in seed 002 which writes sqrt(2 C eps)), diagonal mass M (default
/// I). The continuous dynamics leave p(w | D) N(z | 0, M) invariant when B_hat equals the true
/// gradient-noise term. Seed 002 eq. (2) writes both updates from the state at time t (explicit
/// Euler); we do not follow it there: on a direction of curvature lambda explicit Euler multiplies
/// the energy by about 1 + eps^2 lambda - eps C per step, so it is stable only when the friction
/// exceeds eps lambda_max, and on a stiff posterior (a small network on 20 points: lambda_max ~
/// 2e5) the friction that keeps it stable damps the momentum within a step or two, leaving SGLD at
/// a smaller step. The symplectic update is stable for eps sqrt(lambda_max / M) < 2 at any friction
/// (the same gradient count: one per step). Note that eps here is a time step: the position moves
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
  Index lp_first = 0;  ///< see SgldParams::lp_first
  /// Throws std::invalid_argument naming the parameter and its valid range.
  void validate() const;
};

/// Position and momentum.
struct SghmcState {
  Vec position;
  Vec momentum;
};

/// The first half of an SGHMC step (formula in the file comment): w + eps M^-1 z.
Vec sghmc_move_position(const SghmcState& state, double step_size, const SghmcParams& params);

/// One SGHMC step: `state` at time t, `next_position` = sghmc_move_position(state, ...) and
/// `grad_log_density` taken at next_position. Draws dim normals from `rng` (none when B_hat == C).
SghmcState sghmc_step(Rng& rng, const SghmcState& state, Vec next_position, const Vec& grad_log_density,
                      double step_size, const SghmcParams& params);

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

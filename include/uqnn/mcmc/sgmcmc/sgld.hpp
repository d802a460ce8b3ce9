#pragma once
/// @file Stochastic gradient Langevin dynamics (SGLD): a kernel function and a ChainSampler.
///
/// Convention (seed 002 eq. 1, used by every sampler in uqnn::sgmcmc and by fSGLD):
///     theta_{t+1} = theta_t + eps_t * g_t + sqrt(2 eps_t) * xi_t,   xi_t ~ N(0, I),
/// where g_t = grad log p(theta_t | D) estimated on a minibatch with N/n scaling (= -grad U~).
/// Welling & Teh (2011) write theta += (eps'/2) g + N(0, eps'); the two are the same chain with
/// eps' = 2 eps, so a step size published in Welling & Teh's convention must be halved here.
/// The discretisation has an O(eps) bias (no Metropolis correction): for a Gaussian target with
/// precision lambda along some direction, the stationary variance along it is
/// 1 / (lambda (1 - eps lambda / 2)) with the exact gradient, plus minibatch-noise variance.
/// References: Welling & Teh (2011), "Bayesian learning via stochastic gradient Langevin
/// dynamics", ICML; seed 002 sec. 2.2 eq. (1) and App. D Alg. 1; seed 004 (SGLD).
#include <memory>
#include <string>

#include "uqnn/mcmc/chain_sampler.hpp"
#include "uqnn/mcmc/sgmcmc/gradient_estimator.hpp"
#include "uqnn/mcmc/sgmcmc/step_size_schedule.hpp"
#include "uqnn/core/log_density.hpp"

namespace uqnn::sgmcmc {

/// Tuning of SGLD.
struct SgldParams {
  /// eps_t in the seed-002 convention above (default: constant 1e-4).
  StepSizeSchedule schedule = StepSizeSchedule::constant(1e-4);
  /// Minibatch size n; 0 = full batch (exact gradient). Valid: >= 0.
  Index batch_size = 0;
  /// lp__ reporting. 0 (default): the minibatch estimate of log p computed at the start of the
  /// transition, i.e. at the previous draw (free, noisy, N/n-scaled). k >= 1: the exact full-data
  /// log p at the new draw on every k-th transition and NaN on the others (costs one full pass).
  Index lp_every = 0;
  /// With lp_every = k >= 1: the first transition (1-based) with the exact value, then every k-th
  /// after it; 0 = k. A fit sets it to its first kept draw and k to --sg-lp-every x --thin, so that
  /// the full passes fall on kept draws only (none in burn-in).
  Index lp_first = 0;
  /// Throws std::invalid_argument naming the parameter and its valid range.
  void validate() const;
};

/// One SGLD update: position + step_size * grad_log_density + sqrt(2 step_size) * N(0, I).
/// Pure apart from the normals drawn from `rng` (dim of them, in coordinate order).
Vec sgld_step(Rng& rng, const Vec& position, const Vec& grad_log_density, double step_size);

/// SGLD for one chain. Draw statistics: lp as set by `lp_every`, accept_prob = 1, step_size =
/// eps_t of the transition, n_leapfrog = 1 (one gradient evaluation), tree_depth = 0, energy =
/// NaN. A non-finite gradient estimate leaves the position unchanged and reports is_divergent = true,
/// accept_prob = 0 (never an exception). There is no adaptation: warmup transitions are the same
/// as sampling transitions, and t counts every transition since init().
class SgldSampler : public ChainSampler {
 public:
  /// `density` may be a StochasticLogDensity (minibatches when params.batch_size > 0).
  SgldSampler(std::shared_ptr<const LogDensity> density, SgldParams params);

  void init(const Vec& position) override;
  DrawStats transition(Rng& rng, bool warmup) override;
  const Vec& position() const override { return position_; }
  Index dim() const override { return estimator_.dim(); }
  std::string describe() const override;
  void archive(StateArchive& archive) override;

  const SgldParams& params() const { return params_; }
  /// Gradient steps taken since init() (the schedule's t for the next transition).
  Index iteration() const { return iteration_; }

 private:
  SgldParams params_;
  GradientEstimator estimator_;
  Vec position_, grad_;
  Index iteration_ = 0;
  bool initialised_ = false;
};

}  // namespace uqnn::sgmcmc

#pragma once
/// @file Preconditioned SGLD (pSGLD) with an RMSprop diagonal preconditioner: kernel and ChainSampler.
///
/// Li et al. (2016), Algorithm 1, written in the seed-002 convention of sgld.hpp (their eps is 2x ours):
///     gbar_t = g_t / N                               (mean gradient per data point)
///     V_t    = alpha V_{t-1} + (1 - alpha) gbar_t (.) gbar_t,   V_0 = 0
///     G_t    = diag(1 / (lambda + sqrt(V_t)))
///     theta_{t+1} = theta_t + eps_t (G_t g_t + Gamma_t) + sqrt(2 eps_t G_t) (.) xi_t,  xi_t ~ N(0, I)
/// with g_t the minibatch estimate of grad log p(theta_t | D) (N/n scaled, prior included).
/// Deviation: Li et al. form gbar from the likelihood terms only; the StochasticLogDensity
/// interface returns prior + scaled likelihood together, so gbar here also holds the prior's
/// 1/N share (negligible for N >> 1). For a plain LogDensity (no N), gbar = g.
/// Gamma: Gamma_i = dG_ii/dtheta_i. Like Li et al. (who report that dropping it works well in
/// practice and drop it in their experiments) it is omitted by default. With gamma_correction the
/// sampler computes it from the dependence of the latest V_t term on theta:
///     Gamma_i = -(1 - alpha) G_ii^2 gbar_i h_i / sqrt(V_i),  h_i = H_ii / N,
/// H_ii the diagonal of the exact full-data Hessian of log p, from dim() Hessian-vector products
/// per step (the density must provide them; expensive, meant for small models and checks).
/// Pitfall (inherited from Li et al.'s V_0 = 0): started where the gradient is ~0 (at a mode),
/// V_1 ~ 0 and G ~ 1 / lambda, so the first steps are huge; start away from the mode or use a
/// larger lambda.
/// References: Li, Chen, Carlson & Carin (2016), "Preconditioned stochastic gradient Langevin
/// dynamics for deep neural networks", AAAI, Alg. 1 and eq. (4); seed 004 (preconditioned SGLD).
#include <memory>
#include <string>

#include "uqnn/mcmc/chain_sampler.hpp"
#include "uqnn/mcmc/sgmcmc/gradient_estimator.hpp"
#include "uqnn/mcmc/sgmcmc/step_size_schedule.hpp"
#include "uqnn/core/log_density.hpp"

namespace uqnn::sgmcmc {

/// Tuning of pSGLD (defaults as in Li et al. 2016).
struct PsgldParams {
  /// eps_t in the seed-002 convention (default constant 1e-4).
  StepSizeSchedule schedule = StepSizeSchedule::constant(1e-4);
  /// RMSprop decay alpha in [0, 1) (default 0.99).
  double alpha = 0.99;
  /// Regulariser lambda > 0 of the preconditioner (default 1e-5).
  double lambda = 1e-5;
  /// Include Gamma (see the file comment); default false as in Li et al.'s experiments.
  bool gamma_correction = false;
  /// Minibatch size n; 0 = full batch.
  Index batch_size = 0;
  /// lp__ reporting; see SgldParams::lp_every and lp_first.
  Index lp_every = 0;
  Index lp_first = 0;
  void validate() const;
};

/// Position and the RMSprop average V of squared mean gradients.
struct PsgldState {
  Vec position;
  Vec square_average;  ///< V_t (zeros at the start)
};

/// One pSGLD step. `data_size` is N (gbar = g / N; pass 1 for a density without data).
/// `hessian_diagonal` (diagonal of the full-data Hessian of log p at state.position) is used
/// only when params.gamma_correction is set and must then be given.
/// Draws dim normals from `rng`. Returns the new state; `preconditioner`, when given, receives G_t.
PsgldState psgld_step(Rng& rng, const PsgldState& state, const Vec& grad_log_density, double step_size,
                      double data_size, const PsgldParams& params, const Vec* hessian_diagonal = nullptr,
                      Vec* preconditioner = nullptr);

/// pSGLD for one chain. Draw statistics as SgldSampler (accept_prob = 1, n_leapfrog = 1, energy NaN;
/// non-finite gradient: position unchanged, is_divergent = true, accept_prob = 0).
class PsgldSampler : public ChainSampler {
 public:
  PsgldSampler(std::shared_ptr<const LogDensity> density, PsgldParams params);

  void init(const Vec& position) override;
  DrawStats transition(Rng& rng, bool warmup) override;
  const Vec& position() const override { return state_.position; }
  Index dim() const override { return estimator_.dim(); }
  std::string describe() const override;
  void archive(StateArchive& archive) override;

  const PsgldState& state() const { return state_; }
  /// G of the last transition (empty before the first).
  const Vec& preconditioner() const { return preconditioner_; }
  const PsgldParams& params() const { return params_; }
  Index iteration() const { return iteration_; }

 private:
  PsgldParams params_;
  GradientEstimator estimator_;
  PsgldState state_;
  Vec grad_, preconditioner_;
  Index iteration_ = 0;
  bool initialised_ = false;
};

}  // namespace uqnn::sgmcmc

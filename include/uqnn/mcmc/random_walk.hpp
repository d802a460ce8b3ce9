#pragma once
/// @file Random-walk Metropolis (Metropolis et al. 1953): propose x' = x + s D z with z ~ N(0, I)
/// and D = diag(d), accept with probability min(1, p(x') / p(x)). The proposal is symmetric, so
/// the ratio has no proposal term. Warmup learns each coordinate's scale d_i from the spread of
/// the chain's own draws (the second quarter of warmup, so that the start's transient is left
/// out; set at its midpoint) and tunes the global step s by Robbins-Monro towards an acceptance of 0.234, the optimum for
/// a random walk in many dimensions (Roberts, Gelman & Gilks 1997); s starts at 2.38 / sqrt(K).
/// It needs no gradient, so it samples any LogDensity; it mixes slowly along correlated
/// directions, which the per-coordinate scales do not remove (adaptive Metropolis, `amcmc`, learns
/// a dense proposal instead).
///
/// References: N. Metropolis et al. (1953), J. Chem. Phys. 21, 1087; G. O. Roberts, A. Gelman and
/// W. R. Gilks (1997), Ann. Appl. Probab. 7(1), 110-120; C. Andrieu and J. Thoms (2008), "A tutorial
/// on adaptive MCMC", Stat. Comput. 18, 343-373 (sec. 4, the Robbins-Monro step).
#include <memory>
#include <string>

#include "uqnn/core/log_density.hpp"
#include "uqnn/core/rng.hpp"
#include "uqnn/mcmc/chain_sampler.hpp"

namespace uqnn {

struct RandomWalkParams {
  /// Global step s; 0: 2.38 / sqrt(K) (Roberts, Gelman & Gilks 1997), then tuned in warmup.
  double step_size = 0.0;
  /// Per-coordinate scales d; empty: 1 for every coordinate, then learned in warmup.
  Vec scales;
  double target_accept = 0.234;  ///< in (0, 1): warmup's target acceptance rate
  void validate(Index dim) const;
};

struct RandomWalkState {
  Vec position;
  double log_density = 0.0;
};

struct RandomWalkInfo {
  double accept_prob = 0.0;
  bool accepted = false;
  bool is_divergent = false;  ///< the proposal's log density was not finite (a counted rejection)
};

struct RandomWalkStep {
  RandomWalkState state;
  RandomWalkInfo info;
};

/// The kernel: init / step, no hidden state.
class RandomWalkKernel {
 public:
  explicit RandomWalkKernel(const LogDensity& density) : density_(&density) {}
  RandomWalkState init(const Vec& position) const;
  /// One proposal with step `step_size` and scales `scales` (K entries).
  RandomWalkStep step(Rng& rng, const RandomWalkState& state, double step_size, const Vec& scales) const;

 private:
  const LogDensity* density_;
};

/// One chain for the multi-chain driver: warmup learns the scales and tunes the step.
class RandomWalkChainSampler : public ChainSampler {
 public:
  RandomWalkChainSampler(std::shared_ptr<const LogDensity> density, RandomWalkParams params);
  void init(const Vec& position) override;
  void begin_warmup(Index num_warmup) override { num_warmup_ = num_warmup; }
  DrawStats transition(Rng& rng, bool warmup) override;
  const Vec& position() const override { return state_.position; }
  Index dim() const override { return density_->dim(); }
  std::string describe() const override;
  void archive(StateArchive& archive) override;

 private:
  /// One warmup iteration's adaptation from its acceptance probability.
  void tune(double accept_prob);

  std::shared_ptr<const LogDensity> density_;
  RandomWalkKernel kernel_;
  RandomWalkParams params_;
  RandomWalkState state_;
  Index num_warmup_ = 0;
  long warmup_iterations_ = 0;
  long adaptation_iterations_ = 0;  ///< Robbins-Monro's t, restarted when the scales are set
  // The second quarter of warmup's draws, shifted by the first of them (sums of x - x0 and (x - x0)^2).
  Vec shift_, sum_, sum_squares_;
  long num_summed_ = 0;
};

}  // namespace uqnn

#pragma once
/// @file RandomizedLogDensity: a minibatch log-density estimate that needs random numbers of its own.
/// An interface in core beside LogDensity: the samplers (mcmc/sgmcmc) call it and prob implements it.
#include "uqnn/core/rng.hpp"
#include "uqnn/core/log_density.hpp"

namespace uqnn {

/// A StochasticLogDensity whose unbiased estimate also needs random numbers of its own, e.g. the
/// measurement points of a functional prior drawn at every iteration (seed 002 App. D, Alg. 1-2).
/// SG-MCMC's GradientEstimator calls `randomized_log_density_and_grad` with the chain's Rng, so
/// draws stay reproducible per (seed, chain).
class RandomizedLogDensity : public StochasticLogDensity {
 public:
  /// Estimate of log p and its gradient (overwrites `grad`) on the minibatch `batch` (nullptr:
  /// the full data), drawing the density's own randomness from `rng`.
  virtual double randomized_log_density_and_grad(Rng& rng, const Vec& theta, const IndexVec* batch, Vec& grad) const = 0;
};

}  // namespace uqnn

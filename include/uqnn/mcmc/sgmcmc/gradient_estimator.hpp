#pragma once
/// @file GradientEstimator: the (stochastic) gradient of log p that SG-MCMC samplers step along,
/// with minibatches drawn without replacement per epoch.
///
/// Why: SG-MCMC needs an unbiased estimate of grad log p(theta | D). For a StochasticLogDensity
/// (e.g. Posterior) and 0 < batch_size < N, each call takes the next `batch_size` indices of a
/// random permutation of 0..N-1 (drawn from the chain's Rng at the start of every epoch); when
/// fewer than `batch_size` indices are left, the remainder is dropped and a new permutation is
/// drawn, so every batch has exactly `batch_size` distinct points and is marginally a uniform
/// random subset: the N/n-scaled estimate is unbiased. batch_size = 0 (or >= N), or a density
/// that is not a StochasticLogDensity, gives the exact full-data gradient and uses no randomness.
/// A RandomizedLogDensity (e.g. the functional posterior of fSGLD) also draws its own randomness
/// (measurement points) from the chain's Rng, after the batch, at every call.
/// References: Welling & Teh (2011), eq. (4); seed 002 sec. 2.2 (grad U~ with N/n scaling).
#include <memory>

#include "uqnn/core/rng.hpp"
#include "uqnn/core/state_archive.hpp"
#include "uqnn/core/randomized_log_density.hpp"

namespace uqnn::sgmcmc {

class GradientEstimator {
 public:
  /// batch_size 0 means full batch. A batch_size > 0 needs a StochasticLogDensity (else
  /// std::invalid_argument); batch_size >= num_data() falls back to the full batch.
  GradientEstimator(std::shared_ptr<const LogDensity> density, Index batch_size);

  Index dim() const { return density_->dim(); }
  /// N of a StochasticLogDensity, 0 for a plain LogDensity.
  Index num_data() const { return stochastic_ ? stochastic_->num_data() : 0; }
  /// True when estimate() uses minibatches (and therefore the Rng).
  bool uses_minibatches() const { return stochastic_ != nullptr && batch_size_ > 0 && batch_size_ < num_data(); }
  Index batch_size() const { return uses_minibatches() ? batch_size_ : num_data(); }
  const LogDensity& density() const { return *density_; }

  /// The next minibatch (indices into the data); advances the epoch. Needs uses_minibatches().
  IndexVec next_batch(Rng& rng);
  /// Estimate of log p(theta) and its gradient (overwrites `grad`): minibatch or exact.
  double estimate(Rng& rng, const Vec& theta, Vec& grad);
  /// Starts a new epoch at the next call (the pending permutation is discarded).
  /// The minibatch order: the epoch's permutation and the position in it.
  void archive(StateArchive& a) { a.io(permutation_), a.io(cursor_); }
  void reset() {
    permutation_.clear();
    cursor_ = 0;
  }

 private:
  std::shared_ptr<const LogDensity> density_;
  const StochasticLogDensity* stochastic_ = nullptr;
  const RandomizedLogDensity* randomized_ = nullptr;
  Index batch_size_ = 0;
  IndexVec permutation_;
  std::size_t cursor_ = 0;
};

}  // namespace uqnn::sgmcmc

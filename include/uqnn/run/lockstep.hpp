#pragma once
/// @file Chains in lockstep (issue 19 item 3): the chains one thread runs take turns as fibers
/// (core/lockstep_tasks.hpp), and their gradient requests are evaluated together, one chain per SIMD
/// lane (nn/chain_lanes.hpp).
///
/// The samplers need no change: their density is a LockstepLogDensity, whose gradients are requests.
/// NUTS batches too: each chain asks for one gradient per leapfrog step wherever it is in its tree,
/// so the batch stays full until chains end their runs (NumPyro's vectorised chains instead step
/// every chain's tree in lockstep and wait for the deepest). SG-MCMC's minibatch gradients go to a
/// LockstepStochasticLogDensity the same way, each chain with its own minibatch: requests for
/// minibatches of one size form one minibatch_log_density_and_grad_batch, and full-data ones
/// their own batch.
///
/// Reproducibility: a chain's gradient depends only on its own position and minibatch (LogDensity's
/// batch contract), so its draws are the same whichever chains share its thread, in any order, for any
/// thread or MPI rank count; they differ to rounding from a run without lockstep.
#include <functional>
#include <memory>
#include <vector>

#include "uqnn/core/lockstep_tasks.hpp"
#include "uqnn/core/log_density.hpp"

namespace uqnn {

/// The lockstep form of `density`: a LockstepStochasticLogDensity for a StochasticLogDensity (its
/// minibatch gradients batch too: SG-MCMC), else a LockstepLogDensity. A RandomizedLogDensity draws
/// its own randomness at every gradient, which the wrappers cannot pass on: InputError.
std::shared_ptr<const LogDensity> make_lockstep_density(std::shared_ptr<const LogDensity> density);

/// A LogDensity whose gradients go through `batched`'s log_density_and_grad_batch: from inside
/// run_in_lockstep's tasks, together with the other tasks' requests; elsewhere as a batch of one,
/// with the same result.
class LockstepLogDensity : public LogDensity {
 public:
  explicit LockstepLogDensity(std::shared_ptr<const LogDensity> batched);
  Index dim() const override { return batched_->dim(); }
  double log_density_and_grad(const Vec& theta, Vec& grad) const override;
  /// The value alone is not batched: `batched`'s own (a forward pass where it has one).
  double log_density(const Vec& theta) const override { return batched_->log_density(theta); }
  Vec hessian_vector_product(const Vec& theta, const Vec& v) const override { return batched_->hessian_vector_product(theta, v); }
  const LogDensity& batched() const { return *batched_; }

 private:
  std::shared_ptr<const LogDensity> batched_;
};

/// LockstepLogDensity for a StochasticLogDensity: its minibatch gradients go through `batched`'s
/// minibatch_log_density_and_grad_batch the same way, batched with the other tasks' minibatches of
/// the same size.
class LockstepStochasticLogDensity : public StochasticLogDensity {
 public:
  explicit LockstepStochasticLogDensity(std::shared_ptr<const StochasticLogDensity> batched);
  Index dim() const override { return batched_->dim(); }
  Index num_data() const override { return batched_->num_data(); }
  double log_density_and_grad(const Vec& theta, Vec& grad) const override;
  double minibatch_log_density_and_grad(const Vec& theta, const IndexVec& batch, Vec& grad) const override;
  double log_density(const Vec& theta) const override { return batched_->log_density(theta); }
  Vec hessian_vector_product(const Vec& theta, const Vec& v) const override { return batched_->hessian_vector_product(theta, v); }
  const StochasticLogDensity& batched() const { return *batched_; }

 private:
  std::shared_ptr<const StochasticLogDensity> batched_;
};

}  // namespace uqnn

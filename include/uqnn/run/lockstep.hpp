#pragma once
/// @file Chains in lockstep (issue 19 item 3): the chains one thread runs take turns as fibers, and
/// their gradient requests are evaluated together, one chain per SIMD lane (nn/chain_lanes.hpp).
///
/// How: run_in_lockstep runs its tasks (the driver's chain loops) as stackful fibers
/// (Boost.Context) on the calling thread. A task runs until it asks a LockstepLogDensity for a
/// gradient; when every unfinished task waits, their requests go to the density's
/// log_density_and_grad_batch at once, and the tasks resume. The samplers need no change, and
/// NUTS batches too: each chain asks for one gradient per leapfrog step wherever it is in its tree,
/// so the batch stays full until chains end their runs (NumPyro's vectorised chains instead step
/// every chain's tree in lockstep and wait for the deepest).
///
/// Reproducibility: a chain's gradient depends only on its own position (LogDensity's batch
/// contract), so its draws are the same whichever chains share its thread, in any order, for any
/// thread or MPI rank count; they differ to rounding from a run without lockstep.
#include <functional>
#include <memory>
#include <vector>

#include "uqnn/core/log_density.hpp"

namespace uqnn {

/// Runs `tasks` to their ends on the calling thread, interleaved at their LockstepLogDensity
/// requests as described above. A task's exception is rethrown after every task has ended (the
/// first in task order).
void run_in_lockstep(const std::vector<std::function<void()>>& tasks);

/// A LogDensity whose gradients go through `batched`'s log_density_and_grad_batch: from inside
/// run_in_lockstep's tasks, together with the other tasks' requests; elsewhere as a batch of one,
/// with the same result.
class LockstepLogDensity : public LogDensity {
 public:
  explicit LockstepLogDensity(std::shared_ptr<const LogDensity> batched);
  Index dim() const override { return batched_->dim(); }
  double log_density_and_grad(const Vec& theta, Vec& grad) const override;
  Vec hessian_vector_product(const Vec& theta, const Vec& v) const override { return batched_->hessian_vector_product(theta, v); }
  const LogDensity& batched() const { return *batched_; }

 private:
  std::shared_ptr<const LogDensity> batched_;
};

}  // namespace uqnn

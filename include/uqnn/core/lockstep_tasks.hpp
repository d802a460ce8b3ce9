#pragma once
/// @file Tasks in lockstep (issue 19 item 3): tasks that take turns on one thread as stackful fibers
/// (Boost.Context) and whose requests are evaluated together.
///
/// run_in_lockstep runs its tasks on the calling thread. A task runs until it waits on a
/// LockstepRequest (evaluate_in_lockstep); when every unfinished task waits, the requests are
/// grouped (a request takes every later one that batches_with it, in task order) and each group is
/// evaluated by its first request's evaluate_batch at once; then the tasks resume. The code a task
/// runs (a chain's sampler, a member's optimiser) needs no change: only the object it asks for
/// gradients is a lockstep wrapper (run/lockstep.hpp for log densities, nn/lockstep_model.hpp for
/// models), which makes the request.
#include <functional>
#include <span>
#include <vector>

namespace uqnn {

/// A request a task waits on until it has been evaluated with the other tasks' requests. A
/// wrapper derives one per kind of evaluation, holding its arguments and, once evaluated, its result.
class LockstepRequest {
 public:
  virtual ~LockstepRequest() = default;
  /// Whether `other` (waiting at the same time) goes into this request's batch.
  virtual bool batches_with(const LockstepRequest& other) const = 0;
  /// Evaluates `batch` (this request first, then the requests that batch with it) and stores each
  /// request's result in it. What it throws reaches every task of the batch.
  virtual void evaluate_batch(std::span<LockstepRequest* const> batch) const = 0;
};

/// Runs `tasks` to their ends on the calling thread, interleaved at their requests as described
/// above. A task's exception is rethrown after every task has ended (the first in task order).
void run_in_lockstep(const std::vector<std::function<void()>>& tasks);

/// Inside a run_in_lockstep task: waits until `request` has been evaluated with the other tasks'
/// requests, and rethrows what its batch's evaluation threw. Elsewhere: evaluates it as a batch of one.
void evaluate_in_lockstep(LockstepRequest& request);

}  // namespace uqnn

#include "uqnn/core/lockstep_tasks.hpp"

#include <boost/context/fiber.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>
#include <exception>
#include <stdexcept>

namespace uqnn {

namespace {

namespace ctx = boost::context;

/// A task's stack: a chain's loop or a member's training runs samplers, optimisers and checkpoint
/// writes on it. Reserved, not committed (mmap), with a guard page below it, so an overflow is a
/// clean fault.
constexpr std::size_t kStackBytes = std::size_t{8} << 20;

/// One task of run_in_lockstep: its fiber and, while it waits, its request.
struct LockstepTask {
  ctx::fiber fiber;                 ///< the suspended task (empty once it has ended)
  ctx::fiber* scheduler = nullptr;  ///< inside the task: the scheduler's continuation
  bool done = false;
  std::exception_ptr error;             ///< what the task threw
  LockstepRequest* request = nullptr;   ///< while the task waits
  std::exception_ptr request_error;     ///< what its batch's evaluation threw
};

/// The task running on this thread, if any.
thread_local LockstepTask* current_task = nullptr;

/// Evaluates the waiting tasks' requests, each with the later ones that batch with it (in task order).
void evaluate_requests(std::vector<LockstepTask>& tasks) {
  std::vector<char> handled(tasks.size(), 0);
  std::vector<LockstepRequest*> batch;
  std::vector<LockstepTask*> waiting;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (!tasks[i].request || handled[i]) continue;
    batch.clear(), waiting.clear();
    const LockstepRequest& first = *tasks[i].request;
    for (std::size_t k = i; k < tasks.size(); ++k)
      if (tasks[k].request && !handled[k] && (k == i || first.batches_with(*tasks[k].request))) {
        handled[k] = 1;
        batch.push_back(tasks[k].request);
        waiting.push_back(&tasks[k]);
      }
    std::exception_ptr error;
    try {
      first.evaluate_batch(batch);
    } catch (...) {
      error = std::current_exception();
    }
    for (LockstepTask* task : waiting) {
      task->request_error = error;
      task->request = nullptr;
    }
  }
}

}  // namespace

void run_in_lockstep(const std::vector<std::function<void()>>& functions) {
  if (current_task) throw std::logic_error("run_in_lockstep: called from inside a lockstep task");
  std::vector<LockstepTask> tasks(functions.size());
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    LockstepTask& task = tasks[i];
    const std::function<void()>& function = functions[i];
    task.fiber = ctx::fiber(std::allocator_arg, ctx::protected_fixedsize_stack(kStackBytes),
                            [&task, &function](ctx::fiber&& scheduler) {
                              task.scheduler = &scheduler;
                              try {
                                function();
                              } catch (...) {
                                task.error = std::current_exception();
                              }
                              task.done = true;
                              return std::move(scheduler);
                            });
  }
  for (;;) {
    // Each task that is neither done nor waiting runs until its next request or its end.
    for (LockstepTask& task : tasks) {
      if (task.done || task.request) continue;
      current_task = &task;
      task.fiber = std::move(task.fiber).resume();
      current_task = nullptr;
    }
    bool any_waiting = false;
    for (const LockstepTask& task : tasks) any_waiting = any_waiting || task.request;
    if (!any_waiting) break;
    evaluate_requests(tasks);
  }
  for (const LockstepTask& task : tasks)
    if (task.error) std::rethrow_exception(task.error);
}

void evaluate_in_lockstep(LockstepRequest& request) {
  LockstepTask* task = current_task;
  if (!task) {
    LockstepRequest* alone[1] = {&request};
    request.evaluate_batch(alone);
    return;
  }
  task->request = &request;
  task->request_error = nullptr;
  *task->scheduler = std::move(*task->scheduler).resume();  // back to run_in_lockstep until evaluated
  current_task = task;
  if (task->request_error) std::rethrow_exception(task->request_error);
}

}  // namespace uqnn

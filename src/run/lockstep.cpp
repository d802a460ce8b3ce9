#include "uqnn/run/lockstep.hpp"

#include <boost/context/fiber.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>
#include <exception>
#include <stdexcept>

#include "uqnn/core/error.hpp"
#include "uqnn/prob/randomized_log_density.hpp"

namespace uqnn {

namespace {

namespace ctx = boost::context;

/// A task's stack: a chain's loop runs samplers, MAP fits and checkpoint writes on it. Reserved,
/// not committed (mmap), with a guard page below it, so an overflow is a clean fault.
constexpr std::size_t kStackBytes = std::size_t{8} << 20;

/// One task of run_in_lockstep: its fiber and, while it waits, its gradient request.
struct LockstepTask {
  ctx::fiber fiber;                 ///< the suspended task (empty once it has ended)
  ctx::fiber* scheduler = nullptr;  ///< inside the task: the scheduler's continuation
  bool done = false;
  bool waiting = false;
  std::exception_ptr error;  ///< what the task threw
  // The request: density, position, minibatch (null: the whole data) and gradient; then the result.
  const LogDensity* density = nullptr;
  const Vec* theta = nullptr;
  const IndexVec* minibatch = nullptr;
  Vec* grad = nullptr;
  double value = 0.0;
  std::exception_ptr request_error;
};

/// The task running on this thread, if any.
thread_local LockstepTask* current_task = nullptr;

/// Whether two requests go into one batch: the same density, and both on the whole data or both on
/// minibatches of one size (the lanes of a pass share their examples' count).
bool same_batch(const LockstepTask& a, const LockstepTask& b) {
  if (a.density != b.density || (a.minibatch == nullptr) != (b.minibatch == nullptr)) return false;
  return a.minibatch == nullptr || a.minibatch->size() == b.minibatch->size();
}

/// Evaluates the waiting tasks' requests, one batch per density and kind (in the order of the tasks).
void evaluate_requests(std::vector<LockstepTask>& tasks) {
  std::vector<char> handled(tasks.size(), 0);
  std::vector<const Vec*> thetas;
  std::vector<const IndexVec*> minibatches;
  std::vector<Vec*> grads;
  std::vector<double> values;
  std::vector<LockstepTask*> batch;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (!tasks[i].waiting || handled[i]) continue;
    batch.clear(), thetas.clear(), minibatches.clear(), grads.clear();
    for (std::size_t k = i; k < tasks.size(); ++k)
      if (tasks[k].waiting && !handled[k] && same_batch(tasks[i], tasks[k])) {
        handled[k] = 1;
        batch.push_back(&tasks[k]);
        thetas.push_back(tasks[k].theta);
        minibatches.push_back(tasks[k].minibatch);
        grads.push_back(tasks[k].grad);
      }
    values.assign(batch.size(), 0.0);
    std::exception_ptr error;
    try {
      if (tasks[i].minibatch)  // only a LockstepStochasticLogDensity asks for minibatches
        static_cast<const StochasticLogDensity*>(tasks[i].density)->minibatch_log_density_and_grad_batch(thetas, minibatches, grads, values);
      else
        tasks[i].density->log_density_and_grad_batch(thetas, grads, values);
    } catch (...) {
      error = std::current_exception();
    }
    for (std::size_t b = 0; b < batch.size(); ++b) {
      batch[b]->value = values[b];
      batch[b]->request_error = error;
      batch[b]->waiting = false;
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
      if (task.done || task.waiting) continue;
      current_task = &task;
      task.fiber = std::move(task.fiber).resume();
      current_task = nullptr;
    }
    bool any_waiting = false;
    for (const LockstepTask& task : tasks) any_waiting = any_waiting || task.waiting;
    if (!any_waiting) break;
    evaluate_requests(tasks);
  }
  for (const LockstepTask& task : tasks)
    if (task.error) std::rethrow_exception(task.error);
}

namespace {

/// A gradient request from inside a lockstep task (with `minibatch`, on it): it waits until
/// run_in_lockstep evaluates it together with the other tasks' requests. Outside the tasks, a batch of one.
double request(const LogDensity& density, const Vec& theta, const IndexVec* minibatch, Vec& grad) {
  LockstepTask* task = current_task;
  if (!task) {
    const Vec* thetas[1] = {&theta};
    Vec* grads[1] = {&grad};
    double values[1] = {0.0};
    if (minibatch) {
      const IndexVec* minibatches[1] = {minibatch};
      static_cast<const StochasticLogDensity&>(density).minibatch_log_density_and_grad_batch(thetas, minibatches, grads, values);
    } else {
      density.log_density_and_grad_batch(thetas, grads, values);
    }
    return values[0];
  }
  task->density = &density;
  task->theta = &theta;
  task->minibatch = minibatch;
  task->grad = &grad;
  task->request_error = nullptr;
  task->waiting = true;
  *task->scheduler = std::move(*task->scheduler).resume();  // back to run_in_lockstep until evaluated
  current_task = task;
  if (task->request_error) std::rethrow_exception(task->request_error);
  return task->value;
}

}  // namespace

LockstepLogDensity::LockstepLogDensity(std::shared_ptr<const LogDensity> batched) : batched_(std::move(batched)) {
  if (!batched_) throw std::invalid_argument("LockstepLogDensity: no density");
}

double LockstepLogDensity::log_density_and_grad(const Vec& theta, Vec& grad) const { return request(*batched_, theta, nullptr, grad); }

LockstepStochasticLogDensity::LockstepStochasticLogDensity(std::shared_ptr<const StochasticLogDensity> batched)
    : batched_(std::move(batched)) {
  if (!batched_) throw std::invalid_argument("LockstepStochasticLogDensity: no density");
}

double LockstepStochasticLogDensity::log_density_and_grad(const Vec& theta, Vec& grad) const {
  return request(*batched_, theta, nullptr, grad);
}

double LockstepStochasticLogDensity::minibatch_log_density_and_grad(const Vec& theta, const IndexVec& batch, Vec& grad) const {
  return request(*batched_, theta, &batch, grad);
}

std::shared_ptr<const LogDensity> make_lockstep_density(std::shared_ptr<const LogDensity> density) {
  if (dynamic_cast<const RandomizedLogDensity*>(density.get()))
    throw InputError(
        "--lockstep does not apply to a log density that draws its own randomness at each gradient (fsgld's and fsghmc's "
        "functional prior); run without --lockstep");
  if (auto stochastic = std::dynamic_pointer_cast<const StochasticLogDensity>(density))
    return std::make_shared<LockstepStochasticLogDensity>(std::move(stochastic));
  return std::make_shared<LockstepLogDensity>(std::move(density));
}

}  // namespace uqnn

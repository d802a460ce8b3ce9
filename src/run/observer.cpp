#include "uqnn/run/observer.hpp"

#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>
#include <unistd.h>

#include "uqnn/run/run_chains.hpp"

namespace uqnn {

// ---------------------------------------------------------------- progress
void ProgressObserver::on_begin(const RunConfig& config) {
  tracker_ = std::make_unique<ProgressTracker>(reporter_, task_,
                                               static_cast<long>(config.num_chains) * (config.num_warmup + config.num_draws));
}

ObserverAction ProgressObserver::on_iteration(const IterationEvent& event) {
  // Divergences as Stan counts them: after warmup.
  if (tracker_) tracker_->advance(1, !event.warmup && event.stats != nullptr && event.stats->is_divergent ? 1 : 0);
  return ObserverAction::Continue;
}

void ProgressObserver::on_end(const RunResult& result) {
  if (tracker_) tracker_->finish(result.interrupted);
}

// ---------------------------------------------------------------- interrupt
void InterruptObserver::on_begin(const RunConfig&) {
  scope_ = std::make_unique<StopSignalScope>();
  interrupted_ = false;
}

ObserverAction InterruptObserver::on_iteration(const IterationEvent&) {
  return stop_requested() ? ObserverAction::Stop : ObserverAction::Continue;
}

void InterruptObserver::on_end(const RunResult&) {
  interrupted_ = stop_requested();  // read inside the scope: outside it the flag reads false
  scope_.reset();
}

bool InterruptObserver::interrupted() const { return scope_ ? stop_requested() : interrupted_; }

int InterruptObserver::stop_signal() { return uqnn::stop_signal(); }

void InterruptObserver::request_interrupt() { request_stop(); }

// ---------------------------------------------------------------- writer hook
ObserverAction DrawWriterObserver::on_iteration(const IterationEvent& event) {
  if (!event.kept) return ObserverAction::Continue;
  std::lock_guard lock(mutex_);
  write_(event.chain, event.draw_index, *event.position, *event.stats);
  return ObserverAction::Continue;
}

}  // namespace uqnn

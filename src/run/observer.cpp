#include "uqnn/run/observer.hpp"

#include <atomic>
#include <csignal>
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
namespace {

std::atomic<bool> g_interrupt_flag{false};
using Handler = void (*)(int);
Handler g_previous_handler = SIG_DFL;
std::atomic<int> g_installed{0};

extern "C" void uqnn_sigint_handler(int) {
  if (g_interrupt_flag.load()) std::signal(SIGINT, SIG_DFL);  // second Ctrl-C: default behaviour next time
  g_interrupt_flag.store(true);
}

}  // namespace

void InterruptObserver::on_begin(const RunConfig&) {
  g_interrupt_flag = false;
  if (g_installed++ == 0) g_previous_handler = std::signal(SIGINT, uqnn_sigint_handler);
}

ObserverAction InterruptObserver::on_iteration(const IterationEvent&) {
  return g_interrupt_flag.load(std::memory_order_relaxed) ? ObserverAction::Stop : ObserverAction::Continue;
}

void InterruptObserver::on_end(const RunResult&) {
  if (--g_installed == 0) std::signal(SIGINT, g_previous_handler == SIG_ERR ? SIG_DFL : g_previous_handler);
}

bool InterruptObserver::interrupted() const { return g_interrupt_flag.load(); }

void InterruptObserver::request_interrupt() { g_interrupt_flag = true; }

// ---------------------------------------------------------------- writer hook
ObserverAction DrawWriterObserver::on_iteration(const IterationEvent& event) {
  if (!event.kept) return ObserverAction::Continue;
  std::lock_guard lock(mutex_);
  write_(event.chain, event.draw_index, *event.position, *event.stats);
  return ObserverAction::Continue;
}

}  // namespace uqnn

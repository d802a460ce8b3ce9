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
std::atomic<int> g_interrupt_signal{0};
using Handler = void (*)(int);
// Ctrl-C, and what batch schedulers send before they kill a job (SIGTERM) or a closed terminal
// (SIGHUP): each stops the chains at their next iteration, and what was drawn is kept.
constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};
Handler g_previous_handlers[3] = {SIG_DFL, SIG_DFL, SIG_DFL};
std::atomic<int> g_installed{0};

extern "C" void uqnn_stop_signal_handler(int signal_number) {
  if (g_interrupt_flag.load()) std::signal(signal_number, SIG_DFL);  // a second signal: default behaviour next time
  g_interrupt_signal.store(signal_number);
  g_interrupt_flag.store(true);
}

}  // namespace

void InterruptObserver::on_begin(const RunConfig&) {
  g_interrupt_flag = false;
  g_interrupt_signal = 0;
  if (g_installed++ == 0)
    for (int i = 0; i < 3; ++i) g_previous_handlers[i] = std::signal(kStopSignals[i], uqnn_stop_signal_handler);
}

ObserverAction InterruptObserver::on_iteration(const IterationEvent&) {
  return g_interrupt_flag.load(std::memory_order_relaxed) ? ObserverAction::Stop : ObserverAction::Continue;
}

void InterruptObserver::on_end(const RunResult&) {
  if (--g_installed == 0)
    for (int i = 0; i < 3; ++i) std::signal(kStopSignals[i], g_previous_handlers[i] == SIG_ERR ? SIG_DFL : g_previous_handlers[i]);
}

bool InterruptObserver::interrupted() const { return g_interrupt_flag.load(); }

int InterruptObserver::stop_signal() { return g_interrupt_signal.load(); }

void InterruptObserver::request_interrupt() { g_interrupt_flag = true; }

// ---------------------------------------------------------------- writer hook
ObserverAction DrawWriterObserver::on_iteration(const IterationEvent& event) {
  if (!event.kept) return ObserverAction::Continue;
  std::lock_guard lock(mutex_);
  write_(event.chain, event.draw_index, *event.position, *event.stats);
  return ObserverAction::Continue;
}

}  // namespace uqnn

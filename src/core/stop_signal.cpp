#include "uqnn/core/stop_signal.hpp"

#include <atomic>
#include <csignal>
#include <mutex>

namespace uqnn {
namespace {

std::atomic<bool> g_stop{false};
std::atomic<int> g_signal{0};
using Handler = void (*)(int);
constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};
Handler g_previous[3] = {SIG_DFL, SIG_DFL, SIG_DFL};
std::mutex g_scope_mutex;
std::atomic<int> g_scopes{0};  // written under the mutex, read by stop_requested() without it

extern "C" void uqnn_stop_signal_handler(int signal_number) {
  if (g_stop.load()) std::signal(signal_number, SIG_DFL);  // a second signal: the default action next time
  g_signal.store(signal_number);
  g_stop.store(true);
}

}  // namespace

StopSignalScope::StopSignalScope() {
  std::lock_guard lock(g_scope_mutex);
  if (g_scopes++ > 0) return;
  g_stop = false;
  g_signal = 0;
  for (int i = 0; i < 3; ++i) g_previous[i] = std::signal(kStopSignals[i], uqnn_stop_signal_handler);
}

StopSignalScope::~StopSignalScope() {
  std::lock_guard lock(g_scope_mutex);
  if (--g_scopes > 0) return;
  for (int i = 0; i < 3; ++i) std::signal(kStopSignals[i], g_previous[i] == SIG_ERR ? SIG_DFL : g_previous[i]);
}

// Outside every scope a flag left by an earlier, stopped run must not stop the next one (a library
// caller's second run_chains without an InterruptObserver began no chain at all).
bool stop_requested() { return g_scopes.load(std::memory_order_relaxed) > 0 && g_stop.load(std::memory_order_relaxed); }

int stop_signal() { return g_signal.load(); }

void request_stop() { g_stop = true; }

}  // namespace uqnn

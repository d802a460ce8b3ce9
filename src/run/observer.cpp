#include "uqnn/run/observer.hpp"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>
#include <unistd.h>

#include "uqnn/run/run_chains.hpp"

namespace uqnn {

// ---------------------------------------------------------------- progress bar
ProgressObserver::ProgressObserver(bool force)
    : enabled_(force || (::isatty(STDERR_FILENO) == 1 && std::getenv("CI") == nullptr)) {}

void ProgressObserver::on_begin(const RunConfig& config) {
  total_ = static_cast<long>(config.num_chains) * (config.num_warmup + config.num_draws);
  done_ = 0;
  last_draw_ = std::chrono::steady_clock::now() - std::chrono::seconds(1);
}

ObserverAction ProgressObserver::on_iteration(const IterationEvent&) {
  if (!enabled_) return ObserverAction::Continue;
  ++done_;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(200)) return ObserverAction::Continue;
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return ObserverAction::Continue;
  last_draw_ = now;
  draw(false);
  return ObserverAction::Continue;
}

void ProgressObserver::on_end(const RunResult& result) {
  if (!enabled_) return;
  std::lock_guard lock(mutex_);
  draw(true);
  std::fputs(result.interrupted ? "  (interrupted)\n" : "\n", stderr);
}

void ProgressObserver::draw(bool final) {
  const long done = final ? std::max(done_.load(), 0L) : done_.load();
  const double fraction = total_ > 0 ? std::min(1.0, static_cast<double>(done) / static_cast<double>(total_)) : 1.0;
  constexpr int kWidth = 40;
  const int filled = static_cast<int>(fraction * kWidth);
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.resize(kWidth, '-');
  std::fputs(fmt::format("\r[{}] {:3.0f}% ({}/{} iterations)", bar, 100.0 * fraction, done, total_).c_str(), stderr);
  std::fflush(stderr);
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

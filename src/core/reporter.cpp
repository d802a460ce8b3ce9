#include "uqnn/core/reporter.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace uqnn {

namespace {

std::string clock_text(double seconds) {
  if (!std::isfinite(seconds)) return "?";
  const long s = std::lround(seconds);
  return s >= 3600 ? fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60) : fmt::format("{}:{:02}", s / 60, s % 60);
}

std::string progress_text(const Progress& p) {
  const double fraction = p.total > 0 ? std::min(1.0, static_cast<double>(p.done) / static_cast<double>(p.total)) : 1.0;
  std::string text = fmt::format("{} {:3.0f}% ({}/{}) elapsed {}", p.task, 100.0 * fraction, p.done, p.total,
                                 clock_text(p.elapsed_seconds));
  if (!p.finished) text += " eta " + clock_text(p.eta_seconds);
  if (p.divergences > 0) text += fmt::format(" divergences {}", p.divergences);
  if (!p.detail.empty()) text += " " + p.detail;
  if (p.interrupted) text += " (interrupted)";
  return text;
}

class StderrReporter : public Reporter {
 public:
  StderrReporter(bool quiet, bool terminal, std::FILE* stream) : quiet_(quiet), terminal_(terminal), stream_(stream) {}

  void message(MessageLevel level, const std::string& text) override {
    if (quiet_ && level == MessageLevel::Info) return;
    std::lock_guard lock(mutex_);
    end_bar();
    std::fputs(((level == MessageLevel::Warning ? "warning: " : "") + text + "\n").c_str(), stream_);
    std::fflush(stream_);
  }

  void progress(const Progress& p) override {
    if (quiet_) return;
    std::lock_guard lock(mutex_);
    if (terminal_) {
      // One line redrawn in place; '\r' + clearing to the end of the line.
      std::fputs(("\r" + progress_text(p) + "\033[K").c_str(), stream_);
      bar_open_ = !p.finished;
      if (p.finished) std::fputs("\n", stream_);
    } else {
      // Batch logs: a line when a new tenth is reached or 30 s have passed, and the last one.
      const long tenth = p.total > 0 ? 10 * p.done / p.total : 10;
      const bool new_task = p.task != last_task_;
      if (new_task || p.finished || tenth > last_tenth_ || p.elapsed_seconds - last_line_seconds_ >= 30.0) {
        std::fputs((progress_text(p) + "\n").c_str(), stream_);
        last_task_ = p.finished ? std::string() : p.task;
        last_tenth_ = p.finished ? -1 : tenth;
        last_line_seconds_ = p.elapsed_seconds;
      }
    }
    std::fflush(stream_);
  }

 private:
  void end_bar() {
    if (bar_open_) std::fputs("\n", stream_);
    bar_open_ = false;
  }
  bool quiet_, terminal_;
  std::FILE* stream_;
  std::mutex mutex_;
  bool bar_open_ = false;
  std::string last_task_;
  long last_tenth_ = -1;
  double last_line_seconds_ = 0;
};

class SilentReporter : public Reporter {
 public:
  void message(MessageLevel, const std::string&) override {}
  void progress(const Progress&) override {}
};

}  // namespace

std::shared_ptr<Reporter> make_silent_reporter() { return std::make_shared<SilentReporter>(); }

std::shared_ptr<Reporter> make_stderr_reporter(bool quiet, bool terminal, std::FILE* stream) {
  return std::make_shared<StderrReporter>(quiet, terminal, stream);
}

std::shared_ptr<Reporter> make_stderr_reporter(bool quiet) {
  return make_stderr_reporter(quiet, ::isatty(STDERR_FILENO) == 1 && std::getenv("CI") == nullptr);
}

ProgressTracker::ProgressTracker(std::shared_ptr<Reporter> reporter, std::string task, long total)
    : reporter_(std::move(reporter)), start_(std::chrono::steady_clock::now()) {
  progress_.task = std::move(task);
  progress_.total = total;
}

void ProgressTracker::advance(long steps, long divergences, const std::string& detail) {
  if (!reporter_) return;
  done_.fetch_add(steps, std::memory_order_relaxed);
  if (divergences != 0) divergences_.fetch_add(divergences, std::memory_order_relaxed);
  const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  const bool due = now - last_report_.load(std::memory_order_relaxed) >=
                   std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::milliseconds(200)).count();
  if (!due && detail.empty()) return;
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock() || finished_) return;
  if (!detail.empty()) progress_.detail = detail;
  if (due) report(false);
}

void ProgressTracker::finish(bool interrupted) {
  if (!reporter_) return;
  std::lock_guard lock(mutex_);
  if (finished_) return;
  finished_ = true;
  progress_.interrupted = interrupted;
  report(true);
}

void ProgressTracker::report(bool final) {
  const auto now = std::chrono::steady_clock::now();
  last_report_.store(now.time_since_epoch().count(), std::memory_order_relaxed);
  progress_.done = done_.load(std::memory_order_relaxed);
  progress_.divergences = divergences_.load(std::memory_order_relaxed);
  progress_.elapsed_seconds = std::chrono::duration<double>(now - start_).count();
  // ETA from the mean rate so far (NUTS' warmup iterations are slower than its sampling ones, so
  // this errs long early in a run).
  progress_.eta_seconds = progress_.done > 0 && progress_.total >= progress_.done
                              ? progress_.elapsed_seconds * static_cast<double>(progress_.total - progress_.done) /
                                    static_cast<double>(progress_.done)
                              : std::numeric_limits<double>::quiet_NaN();
  progress_.finished = final;
  reporter_->progress(progress_);
}

}  // namespace uqnn

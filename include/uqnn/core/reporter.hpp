#pragma once
/// @file Where a run's messages and progress go. The CLI writes them to stderr (a redrawn bar on a
/// terminal; plain lines every 10% or 30 s otherwise, for batch logs); the Python module forwards
/// them to `logging` and tqdm. Every method reports through a ProgressTracker, so elapsed time, ETA
/// and divergences look the same whichever method runs.
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <mutex>
#include <string>

namespace uqnn {

enum class MessageLevel { Info, Warning };

/// One task's progress: a run of chains (iterations of every chain), a training run (epochs).
struct Progress {
  std::string task;          ///< e.g. "nuts", "map", "ens"
  long done = 0;             ///< iterations / epochs done so far (of every chain)
  long total = 0;
  long divergences = 0;      ///< so far (sampling methods)
  double elapsed_seconds = 0;
  double eta_seconds = std::numeric_limits<double>::quiet_NaN();  ///< NaN until something is done
  std::string detail;        ///< e.g. "loss 0.0123 validation 0.0456"
  bool finished = false;
  bool interrupted = false;
};

class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual void message(MessageLevel level, const std::string& text) = 0;
  /// Called by a ProgressTracker at most every 200 ms per task, and once with `finished`; may be
  /// called from worker threads (never concurrently for one tracker).
  virtual void progress(const Progress& progress) = 0;
};

/// stderr. `quiet` drops info messages and progress (warnings stay). `terminal` chooses the redrawn
/// bar over plain lines; by default: stderr is a terminal and the environment variable CI is unset.
/// (`stream` replaces stderr in tests.)
std::shared_ptr<Reporter> make_stderr_reporter(bool quiet);
std::shared_ptr<Reporter> make_stderr_reporter(bool quiet, bool terminal, std::FILE* stream = stderr);

/// Drops everything (MPI ranks other than 0).
std::shared_ptr<Reporter> make_silent_reporter();

/// Counts one task's steps from any thread, works out elapsed time and ETA, and passes throttled
/// updates (every 200 ms, and the last) to a reporter. A null reporter makes every call a no-op.
class ProgressTracker {
 public:
  ProgressTracker(std::shared_ptr<Reporter> reporter, std::string task, long total);
  ~ProgressTracker() { finish(); }
  ProgressTracker(const ProgressTracker&) = delete;
  ProgressTracker& operator=(const ProgressTracker&) = delete;
  /// `steps` more done, `divergences` more seen; `detail` replaces the shown detail when not empty.
  void advance(long steps = 1, long divergences = 0, const std::string& detail = {});
  /// The final update (once; later calls do nothing).
  void finish(bool interrupted = false);

 private:
  void report(bool final);  // with mutex_ held
  std::shared_ptr<Reporter> reporter_;
  // Counting is lock-free (advance runs once per iteration of every chain); the mutex guards the
  // rest and is only tried when a report is due.
  std::atomic<long> done_{0}, divergences_{0};
  std::atomic<std::chrono::steady_clock::rep> last_report_{0};
  std::mutex mutex_;
  Progress progress_;
  std::chrono::steady_clock::time_point start_;
  bool finished_ = false;
};

}  // namespace uqnn

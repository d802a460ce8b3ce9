#pragma once
/// @file Observers of a multi-chain run, in ensmallen's vocabulary: on_begin, on_iteration
/// (returning Continue or Stop), on_end. Built-ins: progress (to a Reporter), an interrupt
/// (SIGINT) observer, and a draw writer hook.
///
/// Threading: on_iteration is called from the worker threads, concurrently for different chains
/// (in order within a chain); observers must be thread safe. on_begin / on_end run on the caller.
/// Stop from any observer stops every chain cleanly after its current iteration.
/// References: ensmallen callbacks (Bhardwaj et al. 2021, "ensmallen: a flexible C++ library").
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "uqnn/core/reporter.hpp"
#include "uqnn/core/stop_signal.hpp"
#include "uqnn/mcmc/chain_sampler.hpp"

namespace uqnn {

struct RunConfig;
struct RunResult;

/// Continue; Stop ends every chain; StopChain ends only the chain of the event (e.g. a chain whose
/// function-space LPPD has converged, seed 003 App. B.2 eq. 9), the others keep running.
enum class ObserverAction { Continue, Stop, StopChain };

/// What an observer sees after every iteration of a chain.
struct IterationEvent {
  int chain = 0;
  long iteration = 0;        ///< 0-based, counting warmup then sampling iterations
  bool warmup = false;
  bool kept = false;         ///< this iteration's draw is stored (sampling and on the thinning grid)
  long draw_index = -1;      ///< the row in the chain's draws when kept
  const Vec* position = nullptr;
  const DrawStats* stats = nullptr;
};

class Observer {
 public:
  virtual ~Observer() = default;
  virtual void on_begin(const RunConfig& config) { (void)config; }
  virtual ObserverAction on_iteration(const IterationEvent& event) { (void)event; return ObserverAction::Continue; }
  virtual void on_end(const RunResult& result) { (void)result; }
  /// Observers whose state is a function of the kept draws alone (e.g. the LPPD monitor) return
  /// true: after a run spread over MPI ranks, the kept draws of the chains other ranks ran are
  /// replayed to them (in order, one chain at a time, actions ignored), so that they end up as
  /// in a single process. Others (progress, interrupt) see only the chains of their own rank.
  virtual bool replays_gathered_chains() const { return false; }
};

/// Reports a run's progress (iterations of every chain, divergences after warmup) to a Reporter:
/// the CLI's stderr bar or lines, the Python module's tqdm bar.
class ProgressObserver : public Observer {
 public:
  ProgressObserver(std::shared_ptr<Reporter> reporter, std::string task)
      : reporter_(std::move(reporter)), task_(std::move(task)) {}
  void on_begin(const RunConfig& config) override;
  ObserverAction on_iteration(const IterationEvent& event) override;
  void on_end(const RunResult& result) override;

 private:
  std::shared_ptr<Reporter> reporter_;
  std::string task_;
  std::unique_ptr<ProgressTracker> tracker_;
};

/// Holds a StopSignalScope (core/stop_signal.hpp) from on_begin to on_end: SIGINT, SIGTERM and
/// SIGHUP set a flag, and once it is set on_iteration returns Stop so every chain ends cleanly and
/// keeps its draws. A second signal while stopping gets the default action (the process ends).
class InterruptObserver : public Observer {
 public:
  void on_begin(const RunConfig& config) override;
  ObserverAction on_iteration(const IterationEvent& event) override;
  void on_end(const RunResult& result) override;
  /// Whether SIGINT, SIGTERM or SIGHUP arrived during the run (or request_interrupt was called);
  /// after the run, whether they did during the last one.
  bool interrupted() const;
  /// The signal that stopped the last run (SIGINT, SIGTERM, SIGHUP), 0 when none did: the CLI
  /// exits with 128 + it after writing what was drawn, as a process killed by it would.
  static int stop_signal();
  /// Sets the flag as the handler does (for tests and for embedding applications).
  static void request_interrupt();

 private:
  std::unique_ptr<StopSignalScope> scope_;
  bool interrupted_ = false;
};

/// Calls `write(chain, draw_index, position, stats)` for every kept draw, from the worker threads
/// (serialised by a mutex): the hook for CSV / NetCDF writers and checkpoints.
class DrawWriterObserver : public Observer {
 public:
  using Writer = std::function<void(int chain, long draw_index, const Vec& position, const DrawStats& stats)>;
  explicit DrawWriterObserver(Writer write) : write_(std::move(write)) {}
  ObserverAction on_iteration(const IterationEvent& event) override;

 private:
  Writer write_;
  std::mutex mutex_;
};

/// Stops the run when `predicate(event)` returns true (e.g. a time budget or an external flag).
class StopWhenObserver : public Observer {
 public:
  explicit StopWhenObserver(std::function<bool(const IterationEvent&)> predicate) : predicate_(std::move(predicate)) {}
  ObserverAction on_iteration(const IterationEvent& event) override {
    return predicate_(event) ? ObserverAction::Stop : ObserverAction::Continue;
  }

 private:
  std::function<bool(const IterationEvent&)> predicate_;
};

}  // namespace uqnn

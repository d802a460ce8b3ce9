#pragma once
/// @file Checkpoints of an epoch loop (issue 17): training (map with Adam or SGD, vi) keeps its
/// whole state after an epoch (parameters, the optimiser's moments, the learning-rate schedule, the
/// random-number stream, the history, the best snapshot) in one file, so that a stopped or killed
/// run continues bitwise where it was.
///
/// The loop lists its state once, as a function of a StateArchive (core/state_archive.hpp); the
/// same function saves and restores it.
#include <chrono>
#include <filesystem>
#include <functional>
#include <string>

#include "uqnn/core/state_archive.hpp"
#include "uqnn/core/types.hpp"

namespace uqnn {

/// When a loop saves its state: every `every_count` iterations or epochs, or every `every_seconds`
/// since its last save (0 turns either off). The chain driver and the epoch loops share it.
class SaveInterval {
 public:
  SaveInterval(Index every_count, double every_seconds) : every_count_(every_count), every_seconds_(every_seconds) {}
  /// Whether the loop should save after `done` iterations or epochs.
  bool due(Index done) const { return (every_count_ > 0 && done % every_count_ == 0) || time_is_up(); }
  /// Whether the loop should save after a step that took its count from `before` to `done` (L-BFGS
  /// counts evaluations, several per iteration): a multiple of `every_count` lies in (before, done].
  bool due_between(Index before, Index done) const {
    return (every_count_ > 0 && done / every_count_ > before / every_count_) || time_is_up();
  }
  /// The loop saved now.
  void saved() { last_ = std::chrono::steady_clock::now(); }

 private:
  bool time_is_up() const {
    return every_seconds_ > 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - last_).count() >= every_seconds_;
  }
  Index every_count_;
  double every_seconds_;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

struct EpochCheckpoint {
  std::filesystem::path file;  ///< empty: no checkpoints
  Index every_epochs = 0;      ///< >= 0; 0 = not by count
  double every_seconds = 0.0;  ///< >= 0; 0 = not by time
  bool resume = false;         ///< start from `file` when it exists
  bool enabled() const { return !file.empty(); }
};

/// Saves and restores one loop's state through `state` (which archives every variable the loop
/// carries from one epoch to the next).
class EpochCheckpointer {
 public:
  using State = std::function<void(StateArchive&)>;
  EpochCheckpointer(EpochCheckpoint config, State state)
      : config_(std::move(config)), state_(std::move(state)), interval_(config_.every_epochs, config_.every_seconds) {}
  /// With resume and an existing file: loads the state and returns true. Throws InputError for a file
  /// of another loop or a damaged one.
  bool restore();
  /// After an epoch that the loop goes on from: saves when `every_epochs` or `every_seconds` says so
  /// (`epochs_done` counts the epochs run, restored ones included).
  void after_epoch(Index epochs_done);
  /// After a step of a loop that counts several units per step (L-BFGS: evaluations), from `before`
  /// to `done`: saves when a multiple of `every_epochs` was passed or `every_seconds` says so.
  void after_progress(Index before, Index done);
  /// Saves now (a stop signal ends the loop, which a resumed run continues).
  void save();

 private:
  EpochCheckpoint config_;
  State state_;
  SaveInterval interval_;
};

}  // namespace uqnn

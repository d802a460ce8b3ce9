#pragma once
/// @file The one epoch loop of every gradient-trained estimate: MAP and ensemble members and
/// dropout (optim/trainer.hpp's first-order optimisers), mean-field VI (approx/vi.hpp), the flow
/// (approx/flow.hpp) and SWAG's SGD phase (approx/swag.hpp).
///
/// Why one loop: epochs, minibatches drawn from the caller's Rng, checkpoints that let a stopped run
/// continue bitwise, and stop signals (core/stop_signal.hpp) were written three times over, and each
/// copy had to keep the same order of random draws and the same resume rules. The loop owns those;
/// the caller says what an epoch, a step and the end of an epoch do through callbacks, in the
/// vocabulary of ensmallen's `Optimize(f, x, callbacks...)` (BeginEpoch, StepTaken, EndEpoch; an
/// EndEpoch that returns true ends the run).
/// References: Curtin et al. (2021), "The ensmallen library for flexible numerical optimization", JMLR 22.
#include <functional>
#include <string>

#include "uqnn/core/rng.hpp"
#include "uqnn/core/state_archive.hpp"
#include "uqnn/core/types.hpp"
#include "uqnn/optim/epoch_checkpoint.hpp"

namespace uqnn {

/// What the end of an epoch tells the loop.
enum class EpochAction {
  Continue,  ///< go on (a stop signal still ends the run, with a checkpoint to resume from)
  Finish,    ///< the run is complete after this epoch (early stopping, a levelled-off loss): no checkpoint
  Stop,      ///< end now, before the epoch counts as done (a progress callback asked to stop)
};

/// How the rows of an epoch's steps are drawn. Both use the caller's Rng only when batches are
/// smaller than the data (batch_size 0 or >= num_data: every step sees all rows, in order).
enum class Minibatches {
  /// A new permutation of the rows at the start of every epoch, cut into batches of batch_size;
  /// the last, shorter batch is kept. An epoch is one pass over the data.
  EpochPermutation,
  /// One step per epoch, its batch the next batch_size rows of a running permutation; when fewer
  /// are left, a new permutation is drawn and the rest dropped, so every batch is a uniform random
  /// subset of exactly batch_size rows (SWAG's SGD, which counts steps, not passes).
  RunningPermutation,
};

struct EpochLoopParams {
  Index epochs = 1;      ///< epochs (or, for RunningPermutation, steps) to run
  Index num_data = 0;    ///< N: the rows that batches are drawn from (0: a density without data)
  Index batch_size = 0;  ///< 0 or >= num_data: full batch
  Minibatches minibatches = Minibatches::EpochPermutation;
  EpochCheckpoint checkpoint;      ///< where and how often the loop's state is saved
  std::string checkpoint_section;  ///< names the loop in its checkpoint file (a file of another loop is refused)
};

struct EpochLoopCallbacks {
  /// At the start of an epoch, before its rows are drawn (a learning-rate schedule's step).
  std::function<void(Index epoch)> on_epoch_begin;
  /// One step on the rows `rows` (all rows, in order, in full batch). Required.
  std::function<void(Index epoch, const IndexVec& rows)> on_step;
  /// At the end of an epoch: what the loop does next.
  std::function<EpochAction(Index epoch)> on_epoch_end;
  /// Archives every variable the caller carries from one epoch to the next (its Rng included), in
  /// one fixed order: the same function saves and restores a checkpoint.
  std::function<void(StateArchive&)> state;
};

struct EpochLoopResult {
  Index epochs_done = 0;       ///< epochs completed (restored ones included; one Stop-ped is not)
  Index resumed_at_epoch = 0;  ///< the epoch a checkpoint restored (0: started afresh)
  bool interrupted = false;    ///< a stop signal ended the run (core/stop_signal.hpp)
};

/// Runs epochs resumed from the checkpoint when it says so, each: on_epoch_begin, the minibatch
/// steps, on_epoch_end; then a stop signal ends the run (saving the state after this epoch unless
/// it was the last or on_epoch_end said Finish), and otherwise the checkpoint is saved when due.
/// Exceptions of the callbacks pass through (a diverged step ends the run).
EpochLoopResult run_epochs(const EpochLoopParams& params, Rng& rng, const EpochLoopCallbacks& callbacks);

}  // namespace uqnn

// The one epoch loop (optim/epoch_loop.hpp): which rows each step sees, what the end-of-epoch
// actions do, and that a stop signal's checkpoint resumes to the uninterrupted run. The trainers'
// own resume tests (run/checkpoint_test.cpp) check MAP, VI, the flow, dropout and SWAG through it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <utility>
#include <vector>

#include "../io/temp_dir.hpp"
#include "uqnn/core/stop_signal.hpp"
#include "uqnn/optim/epoch_loop.hpp"

namespace uqnn {
namespace {

/// Every step's (epoch, rows) of a run.
struct Recorded {
  std::vector<Index> epochs;
  std::vector<IndexVec> rows;
};

EpochLoopParams loop_params(Index epochs, Index n, Index batch, Minibatches kind = Minibatches::EpochPermutation) {
  EpochLoopParams p;
  p.epochs = epochs;
  p.num_data = n;
  p.batch_size = batch;
  p.minibatches = kind;
  p.checkpoint_section = "epoch loop test 1";
  return p;
}

EpochLoopCallbacks recording(Recorded& r) {
  EpochLoopCallbacks c;
  c.on_step = [&r](Index epoch, const IndexVec& rows) {
    r.epochs.push_back(epoch);
    r.rows.push_back(rows);
  };
  return c;
}

TEST(EpochLoop, EachEpochCutsANewPermutationIntoBatchesAndKeepsTheShortLastOne) {
  Recorded r;
  Rng rng(7);
  const EpochLoopResult done = run_epochs(loop_params(3, 10, 4), rng, recording(r));
  EXPECT_EQ(done.epochs_done, 3);
  EXPECT_FALSE(done.interrupted);
  Rng reference(7);
  std::vector<IndexVec> expected;
  for (int epoch = 0; epoch < 3; ++epoch) {
    const IndexVec order = reference.permutation(10);
    expected.emplace_back(order.begin(), order.begin() + 4);
    expected.emplace_back(order.begin() + 4, order.begin() + 8);
    expected.emplace_back(order.begin() + 8, order.end());
  }
  EXPECT_EQ(r.rows, expected);
  EXPECT_EQ(r.epochs, (std::vector<Index>{0, 0, 0, 1, 1, 1, 2, 2, 2}));
  EXPECT_EQ(rng.uniform(), reference.uniform());  // no other draws from the caller's Rng
}

TEST(EpochLoop, ARunningPermutationGivesFullBatchesAndDropsTheRest) {
  Recorded r;
  Rng rng(11);
  run_epochs(loop_params(5, 10, 4, Minibatches::RunningPermutation), rng, recording(r));
  Rng reference(11);
  const IndexVec first = reference.permutation(10), second = reference.permutation(10), third = reference.permutation(10);
  const std::vector<IndexVec> expected = {
      IndexVec(first.begin(), first.begin() + 4),   IndexVec(first.begin() + 4, first.begin() + 8),
      IndexVec(second.begin(), second.begin() + 4), IndexVec(second.begin() + 4, second.begin() + 8),
      IndexVec(third.begin(), third.begin() + 4)};
  EXPECT_EQ(r.rows, expected);
  EXPECT_EQ(r.epochs, (std::vector<Index>{0, 1, 2, 3, 4}));
}

TEST(EpochLoop, AFullBatchSeesEveryRowInOrderAndDrawsNothing) {
  for (const Index batch : {0, 5, 9}) {
    for (const Minibatches kind : {Minibatches::EpochPermutation, Minibatches::RunningPermutation}) {
      Recorded r;
      Rng rng(3), untouched(3);
      run_epochs(loop_params(2, 5, batch, kind), rng, recording(r));
      EXPECT_EQ(r.rows, (std::vector<IndexVec>{{0, 1, 2, 3, 4}, {0, 1, 2, 3, 4}})) << "batch " << batch;
      EXPECT_EQ(rng.uniform(), untouched.uniform()) << "batch " << batch;
    }
  }
  Recorded no_data;  // a density without data (the flow on a plain LogDensity): one step per epoch
  Rng rng(3);
  run_epochs(loop_params(2, 0, 0), rng, recording(no_data));
  EXPECT_EQ(no_data.rows, (std::vector<IndexVec>{{}, {}}));
}

TEST(EpochLoop, StopEndsBeforeTheEpochCountsAndFinishAfterIt) {
  for (const EpochAction action : {EpochAction::Stop, EpochAction::Finish}) {
    Recorded r;
    EpochLoopCallbacks c = recording(r);
    std::vector<Index> begun;
    c.on_epoch_begin = [&begun](Index epoch) { begun.push_back(epoch); };
    c.on_epoch_end = [action](Index epoch) { return epoch == 2 ? action : EpochAction::Continue; };
    Rng rng(1);
    const EpochLoopResult done = run_epochs(loop_params(6, 4, 2), rng, c);
    EXPECT_EQ(begun, (std::vector<Index>{0, 1, 2}));
    EXPECT_EQ(done.epochs_done, action == EpochAction::Stop ? 2 : 3);
  }
}

/// A run whose state is a running sum of the rows seen, stopped by a signal after epoch `stop_after`
/// (negative: never) with the end-of-epoch action `action`.
struct SumRun {
  double sum = 0.0;
  Recorded recorded;
  EpochLoopResult run(const EpochLoopParams& params, Rng& rng, Index stop_after, EpochAction action = EpochAction::Continue) {
    EpochLoopCallbacks c = recording(recorded);
    const auto record = c.on_step;
    c.on_step = [this, record](Index epoch, const IndexVec& rows) {
      record(epoch, rows);
      for (const Index i : rows) sum = 0.5 * sum + static_cast<double>(i);
    };
    c.on_epoch_end = [stop_after, action](Index epoch) {
      if (epoch == stop_after) {
        request_stop();
        return action;
      }
      return EpochAction::Continue;
    };
    c.state = [this, &rng](StateArchive& a) { a.io(sum), a.io(rng); };
    return run_epochs(params, rng, c);
  }
};

TEST(EpochLoop, AStopSignalSavesTheStateAndTheResumedRunIsTheUninterruptedOne) {
  for (const Minibatches kind : {Minibatches::EpochPermutation, Minibatches::RunningPermutation}) {
    EpochLoopParams params = loop_params(9, 10, 3, kind);
    SumRun plain;
    Rng plain_rng(5);
    plain.run(params, plain_rng, -1);
    testing::TempDir dir;
    params.checkpoint.file = dir.path() / "loop.state";
    {
      const StopSignalScope scope;
      Rng rng(5);
      SumRun stopped;
      EXPECT_TRUE(stopped.run(params, rng, 3).interrupted);
    }
    ASSERT_TRUE(std::filesystem::exists(params.checkpoint.file));
    params.checkpoint.resume = true;
    const StopSignalScope scope;
    Rng fresh(5);
    SumRun resumed;
    const EpochLoopResult done = resumed.run(params, fresh, -1);
    EXPECT_EQ(done.resumed_at_epoch, 4);
    EXPECT_EQ(done.epochs_done, 9);
    EXPECT_EQ(resumed.sum, plain.sum);
    const auto first_resumed = std::find(plain.recorded.epochs.begin(), plain.recorded.epochs.end(), 4) - plain.recorded.epochs.begin();
    EXPECT_EQ(resumed.recorded.rows, std::vector<IndexVec>(plain.recorded.rows.begin() + first_resumed, plain.recorded.rows.end()));
  }
}

TEST(EpochLoop, ARunThatFinishesOrEndsAtTheLastEpochSavesNoCheckpoint) {
  for (const auto& [stop_after, action] : {std::pair{Index{3}, EpochAction::Finish}, std::pair{Index{8}, EpochAction::Continue}}) {
    EpochLoopParams params = loop_params(9, 10, 3);
    testing::TempDir dir;
    params.checkpoint.file = dir.path() / "loop.state";
    const StopSignalScope scope;
    Rng rng(5);
    SumRun run;
    EXPECT_TRUE(run.run(params, rng, stop_after, action).interrupted);
    EXPECT_FALSE(std::filesystem::exists(params.checkpoint.file)) << "stopped after epoch " << stop_after;
  }
}

}  // namespace
}  // namespace uqnn

#include "uqnn/optim/epoch_loop.hpp"

#include <algorithm>
#include <stdexcept>

#include "uqnn/core/stop_signal.hpp"

namespace uqnn {

namespace epoch_loop_detail {

/// The rows of an epoch's steps (see Minibatches); the running permutation and the position in it
/// carry over from one epoch to the next, so they are part of the loop's checkpoint.
class BatchSource {
 public:
  explicit BatchSource(const EpochLoopParams& params)
      : n_(params.num_data), kind_(params.minibatches),
        batch_(params.batch_size == 0 || params.batch_size >= params.num_data ? 0 : params.batch_size),
        position_(params.num_data) {}

  bool full() const { return batch_ == 0; }

  /// Calls `step(rows)` for each batch of one epoch, drawing from `rng` as the kind says.
  template <class Step>
  void epoch(Rng& rng, Step&& step) {
    if (full()) {
      IndexVec rows(static_cast<std::size_t>(n_));
      for (Index i = 0; i < n_; ++i) rows[static_cast<std::size_t>(i)] = i;
      step(rows);
      return;
    }
    if (kind_ == Minibatches::RunningPermutation) {
      if (position_ + batch_ > n_) {
        order_ = rng.permutation(n_);
        position_ = 0;
      }
      const IndexVec rows(order_.begin() + position_, order_.begin() + position_ + batch_);
      position_ += batch_;
      step(rows);
      return;
    }
    const IndexVec order = rng.permutation(n_);
    for (Index start = 0; start < n_; start += batch_) {
      const Index stop = std::min(n_, start + batch_);
      const IndexVec rows(order.begin() + start, order.begin() + stop);
      step(rows);
    }
  }

  /// The running permutation's state (none for EpochPermutation: each epoch draws its own).
  void archive(StateArchive& a) {
    if (kind_ == Minibatches::RunningPermutation) a.io(order_), a.io(position_);
  }

 private:
  Index n_;
  Minibatches kind_;
  Index batch_;
  IndexVec order_;
  Index position_;
};

}  // namespace epoch_loop_detail

EpochLoopResult run_epochs(const EpochLoopParams& params, Rng& rng, const EpochLoopCallbacks& callbacks) {
  if (!callbacks.on_step) throw std::invalid_argument("run_epochs: on_step is required");
  epoch_loop_detail::BatchSource batches(params);
  EpochLoopResult result;
  Index next_epoch = 0;  // where the loop (re)starts; after an epoch, the one after it
  EpochCheckpointer checkpoint(params.checkpoint, [&](StateArchive& a) {
    a.section(params.checkpoint_section);
    a.io(next_epoch);
    batches.archive(a);
    if (callbacks.state) callbacks.state(a);
  });
  if (checkpoint.restore()) result.resumed_at_epoch = next_epoch;
  for (Index epoch = next_epoch; epoch < params.epochs; ++epoch) {
    if (callbacks.on_epoch_begin) callbacks.on_epoch_begin(epoch);
    batches.epoch(rng, [&](const IndexVec& rows) { callbacks.on_step(epoch, rows); });
    const EpochAction action = callbacks.on_epoch_end ? callbacks.on_epoch_end(epoch) : EpochAction::Continue;
    if (action == EpochAction::Stop) break;
    // The checkpoint holds the state a run goes on from: after this epoch, unless the run ends here.
    next_epoch = epoch + 1;
    if (stop_requested()) {  // SIGINT / SIGTERM / SIGHUP: keep what this epoch reached
      result.interrupted = true;
      if (action == EpochAction::Continue && next_epoch < params.epochs) checkpoint.save();
      break;
    }
    if (action == EpochAction::Finish) break;
    if (next_epoch < params.epochs) checkpoint.after_epoch(next_epoch);
  }
  result.epochs_done = next_epoch;
  return result;
}

}  // namespace uqnn

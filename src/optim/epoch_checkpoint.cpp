#include "uqnn/optim/epoch_checkpoint.hpp"

#include "uqnn/io/atomic_file.hpp"

namespace uqnn {

bool EpochCheckpointer::restore() {
  if (!config_.enabled() || !config_.resume || !std::filesystem::exists(config_.file)) return false;
  StateArchive archive = StateArchive::read_file(config_.file);
  state_(archive);
  archive.expect_end();
  return true;
}

void EpochCheckpointer::after_epoch(Index epochs_done) {
  if (config_.enabled() && interval_.due(epochs_done)) save();
}

void EpochCheckpointer::after_progress(Index before, Index done) {
  if (config_.enabled() && interval_.due_between(before, done)) save();
}

void EpochCheckpointer::save() {
  if (!config_.enabled()) return;
  StateArchive archive;
  state_(archive);
  std::filesystem::create_directories(config_.file.parent_path());
  atomic_write_text(config_.file, archive.take());
  interval_.saved();
}

}  // namespace uqnn

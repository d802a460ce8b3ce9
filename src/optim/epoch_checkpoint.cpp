#include "uqnn/optim/epoch_checkpoint.hpp"

#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "uqnn/core/error.hpp"
#include "uqnn/io/atomic_file.hpp"

namespace uqnn {

bool EpochCheckpointer::restore() {
  if (!config_.enabled() || !config_.resume || !std::filesystem::exists(config_.file)) return false;
  std::ifstream in(config_.file, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot be read", config_.file.string()));
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  StateArchive archive(bytes, config_.file.string());
  state_(archive);
  archive.expect_end();
  return true;
}

void EpochCheckpointer::after_epoch(Index epochs_done) {
  if (!config_.enabled()) return;
  const auto now = std::chrono::steady_clock::now();
  if ((config_.every_epochs > 0 && epochs_done % config_.every_epochs == 0) ||
      (config_.every_seconds > 0 && std::chrono::duration<double>(now - last_).count() >= config_.every_seconds))
    save();
}

void EpochCheckpointer::save() {
  if (!config_.enabled()) return;
  StateArchive archive;
  state_(archive);
  const std::string bytes = archive.take();
  std::filesystem::create_directories(config_.file.parent_path());
  atomic_write(config_.file, [&](std::ostream& out) { out.write(bytes.data(), static_cast<std::streamsize>(bytes.size())); });
  last_ = std::chrono::steady_clock::now();
}

}  // namespace uqnn

// The serial communicator, the process-wide work layout and the exchange of item results (the parts
// of issue 16 that do not need MPI; src/core/mpi_communicator.cpp has the MPI implementation).
#include "uqnn/core/communicator.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <stdexcept>

#include "uqnn/core/error.hpp"

namespace uqnn {

void SerialCommunicator::abort(const std::string& message, int code) const {
  std::cerr << message << '\n';
  std::exit(code);
}

Part Part::parse(const std::string& text, const std::string& where) {
  const auto slash = text.find('/');
  const auto invalid = [&] {
    return InputError(fmt::format("{} '{}' is invalid: it must be k/n with integers 1 <= k <= n (part k of n)", where, text));
  };
  if (slash == std::string::npos) throw invalid();
  Part p;
  try {
    std::size_t used = 0;
    const std::string a = text.substr(0, slash), b = text.substr(slash + 1);
    p.k = std::stoi(a, &used);
    if (used != a.size()) throw invalid();
    p.n = std::stoi(b, &used);
    if (used != b.size()) throw invalid();
  } catch (const std::logic_error&) {  // stoi: not a number or out of range
    throw invalid();
  }
  if (p.n < 1 || p.k < 1 || p.k > p.n) throw invalid();
  return p;
}

bool WorkLayout::runs_here(std::int64_t item) const {
  return part.owns(item) && part_index(item) % chains->size() == chains->rank();
}

namespace {

std::mutex layout_mutex;
std::shared_ptr<const Communicator>& world_slot() {
  static std::shared_ptr<const Communicator> world = std::make_shared<SerialCommunicator>();
  return world;
}
WorkLayout& layout_slot() {
  static WorkLayout layout{world_slot(), world_slot(), std::make_shared<SerialCommunicator>(), {}};
  return layout;
}

}  // namespace

std::shared_ptr<const Communicator> world_communicator() {
  std::lock_guard lock(layout_mutex);
  return world_slot();
}

void set_world_communicator(std::shared_ptr<const Communicator> world) {
  std::lock_guard lock(layout_mutex);
  world_slot() = std::move(world);
  layout_slot() = WorkLayout{world_slot(), world_slot(), std::make_shared<SerialCommunicator>(), {}};
}

const WorkLayout& work_layout() {
  std::lock_guard lock(layout_mutex);
  return layout_slot();
}

void set_work_layout(int shards, Part part) {
  std::lock_guard lock(layout_mutex);
  const auto& world = world_slot();
  if (shards < 1 || world->size() % shards != 0)
    throw InputError(fmt::format("--shards {} is invalid: it must divide the number of MPI processes ({}); e.g. mpirun -np {} "
                                 "runs {} chain group(s) of {} shard(s)",
                                 shards, world->size(), 2 * shards, 2, shards));
  WorkLayout layout;
  layout.world = world;
  // Rank w is shard w mod S of chain group w / S: the ranks of one group run the same chains on
  // different rows; the ranks with the same shard index share out the chains.
  const int w = world->rank();
  layout.chains = shards == 1 ? world : world->split(w % shards, w);
  layout.shards = shards == 1 ? std::shared_ptr<const Communicator>(std::make_shared<SerialCommunicator>())
                              : world->split(w / shards, w);
  layout.part = part;
  layout_slot() = std::move(layout);
}

void reset_work_layout() {
  std::lock_guard lock(layout_mutex);
  layout_slot() = WorkLayout{world_slot(), world_slot(), std::make_shared<SerialCommunicator>(), {}};
}

void ByteReader::check(std::size_t n) const {
  if (n > bytes_.size() - pos_) throw std::runtime_error("ByteReader: message shorter than its contents (ranks disagree)");
}

void ByteReader::read(void* p, std::size_t n) {
  check(n);
  bytes_.copy(static_cast<char*>(p), n, pos_);
  pos_ += n;
}

namespace {
std::atomic<bool> shared_failure{false};
}  // namespace

bool failure_is_shared() { return shared_failure.load(); }

int report_failure(const std::string& message, int code) {
  const auto world = world_communicator();
  if (world->size() > 1 && !failure_is_shared())
    world->abort(fmt::format("error (MPI rank {} of {}): {}", world->rank(), world->size(), message), code);
  if (world->is_root()) std::cerr << "error: " << message << '\n';
  return code;
}

std::vector<std::string> exchange_items(std::int64_t count, const std::vector<std::string>& local, std::exception_ptr error) {
  const WorkLayout& layout = work_layout();
  // 0 = no failure, 1 = InputError, 2 = std::invalid_argument, 3 = anything else, 4 = DivergenceError.
  std::int64_t kind = 0;
  std::string message;
  if (error) {
    try {
      std::rethrow_exception(error);
    } catch (const InputError& e) {
      kind = 1, message = e.what();
    } catch (const std::invalid_argument& e) {
      kind = 2, message = e.what();
    } catch (const DivergenceError& e) {
      kind = 4, message = e.what();
    } catch (const std::exception& e) {
      kind = 3, message = e.what();
    } catch (...) {
      kind = 3, message = "unknown exception";
    }
  }
  if (layout.chains->size() == 1) {  // nothing to exchange: keep the original exception
    if (error) std::rethrow_exception(error);
    return local;
  }
  ByteWriter w;
  w.put(kind);
  w.put(message);
  for (std::int64_t i = 0; i < count; ++i)
    if (layout.runs_here(i)) {
      w.put(i);
      w.put(local[static_cast<std::size_t>(i)]);
    }
  const std::vector<std::string> all = layout.chains->all_gather(w.take());
  std::vector<std::string> out(static_cast<std::size_t>(count));
  for (std::size_t r = 0; r < all.size(); ++r) {
    ByteReader in(all[r]);
    const std::int64_t failed = in.get_int();
    const std::string what = in.get_string();
    if (failed != 0) {
      shared_failure = true;
      if (failed == 1) throw InputError(what);
      if (failed == 2) throw std::invalid_argument(what);
      if (failed == 4) throw DivergenceError(fmt::format("rank {} of the chain ranks: {}", r, what));
      throw std::runtime_error(fmt::format("rank {} of the chain ranks: {}", r, what));
    }
    while (!in.done()) {
      const std::int64_t i = in.get_int();
      out[static_cast<std::size_t>(i)] = in.get_string();
    }
  }
  return out;
}

}  // namespace uqnn

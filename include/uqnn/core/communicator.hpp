#pragma once
/// @file Communicator: the few collective operations uqnn needs to spread a run over processes
/// (MPI ranks), behind a small interface so that the library builds and runs without MPI.
///
/// Why an interface: one machine needs no mpirun; the serial implementation (one rank) is always
/// built, the MPI one only with the CMake option UQNN_MPI (src/core/mpi_communicator.cpp). MPI_Init
/// belongs to the program's main (apps/uqnn/main.cpp, the examples), never to the library: a
/// program that calls MpiSession::start installs the world communicator with set_world().
///
/// Lives in core because approx (ensemble members), prob (sharded likelihood) and run (chains) all
/// use it, and core is the only layer below all three.
///
/// Work distribution (issue 16): the chains of a run and the members of an ensemble are spread over
/// the ranks of chain_communicator() (item i on rank i mod size), every rank gets every result
/// (all_gather), so each rank continues with the same RunResult as a single process; only rank 0
/// writes files. --shards S splits the world into groups of S ranks that run the same chains and
/// sum their rows' log likelihood (shard_communicator()); --part k/n restricts a process to the items
/// i with i mod n == k - 1 (part_filter()).
/// References: MPI 4.0 standard, ch. 6 (collective communication); Stan's map_rect / reduce_sum.
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace uqnn {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  bool is_root() const { return rank() == 0; }

  /// Every rank's bytes, in rank order, on every rank.
  virtual std::vector<std::string> all_gather(const std::string& bytes) const = 0;
  /// Elementwise sum over the ranks, the same bits on every rank and in every run: the terms are
  /// gathered and added in rank order ((v_0 + v_1) + v_2) + ..., a fixed reduction order that
  /// MPI_Allreduce does not promise (its algorithm may change with the message size).
  virtual void all_reduce_sum(std::span<double> values) const = 0;
  /// The ranks with the same `color`, ordered by (key, rank).
  virtual std::shared_ptr<Communicator> split(int color, int key) const = 0;
  /// Prints `message` on stderr and ends every process of the run with exit code `code` (MPI_Abort:
  /// a failing rank never leaves the others waiting in a collective).
  [[noreturn]] virtual void abort(const std::string& message, int code) const = 0;
};

/// One process: rank 0 of 1; the collectives are identities.
class SerialCommunicator : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::vector<std::string> all_gather(const std::string& bytes) const override { return {bytes}; }
  void all_reduce_sum(std::span<double>) const override {}
  std::shared_ptr<Communicator> split(int, int) const override { return std::make_shared<SerialCommunicator>(); }
  [[noreturn]] void abort(const std::string& message, int code) const override;
};

/// Part k of n of a run's independent items (chains, members): item i belongs to it iff i mod n ==
/// k - 1 (round robin, so every part has chains of both ends of the index range). k is 1-based.
struct Part {
  int k = 1, n = 1;
  bool whole() const { return n == 1; }
  bool owns(std::int64_t item) const { return item % n == k - 1; }
  /// Parses "k/n" with 1 <= k <= n; throws InputError naming `where` otherwise.
  static Part parse(const std::string& text, const std::string& where);
  std::string text() const { return std::to_string(k) + "/" + std::to_string(n); }
};

/// The process-wide distribution of work: set once by a program's main (MPI) or the fit service
/// (--part, --shards) before a run, read by run_chains, run_members and the posterior.
struct WorkLayout {
  std::shared_ptr<const Communicator> world;   ///< every process of the run
  std::shared_ptr<const Communicator> chains;  ///< ranks that share out chains / members (one per shard group)
  std::shared_ptr<const Communicator> shards;  ///< ranks that share one chain's data rows
  Part part;                                   ///< --part k/n
  /// Whether item i runs in this process: its part owns it and it falls to this rank's chain group.
  bool runs_here(std::int64_t item) const;
  /// Items of this part, in order, for the round robin over chain ranks.
  std::int64_t part_index(std::int64_t item) const { return item / part.n; }
};

/// The world communicator: MPI's when a program started an MpiSession, otherwise serial.
std::shared_ptr<const Communicator> world_communicator();
/// Installs the world communicator (MpiSession::start does; tests may install their own).
void set_world_communicator(std::shared_ptr<const Communicator> world);

/// The current layout (default: the world, one shard per rank, the whole run).
const WorkLayout& work_layout();
/// Sets the layout for the runs that follow: `shards` ranks per chain group (world size must be a
/// multiple of it), this process's part. Throws InputError naming --shards when the world size is
/// not a multiple of `shards`.
void set_work_layout(int shards, Part part);
/// Back to the default layout.
void reset_work_layout();

/// Serialisation of what ranks exchange: a byte string of doubles and integers, read back in the
/// order written (native byte order: the ranks of one run share one architecture).
class ByteWriter {
 public:
  void put(double x) { append(&x, sizeof x); }
  void put(std::int64_t x) { append(&x, sizeof x); }
  void put(const std::vector<double>& v) {
    put(static_cast<std::int64_t>(v.size()));
    append(v.data(), v.size() * sizeof(double));
  }
  void put(const std::string& s) {
    put(static_cast<std::int64_t>(s.size()));
    bytes_.append(s);
  }
  std::string take() { return std::move(bytes_); }

 private:
  void append(const void* p, std::size_t n) { bytes_.append(static_cast<const char*>(p), n); }
  std::string bytes_;
};

class ByteReader {
 public:
  explicit ByteReader(const std::string& bytes) : bytes_(bytes) {}
  double get_double() { double x; read(&x, sizeof x); return x; }
  std::int64_t get_int() { std::int64_t x; read(&x, sizeof x); return x; }
  std::vector<double> get_doubles() {
    std::vector<double> v(static_cast<std::size_t>(get_int()));
    read(v.data(), v.size() * sizeof(double));
    return v;
  }
  std::string get_string() {
    const auto n = static_cast<std::size_t>(get_int());
    check(n);
    std::string s = bytes_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  bool done() const { return pos_ == bytes_.size(); }

 private:
  void check(std::size_t n) const;
  void read(void* p, std::size_t n);
  const std::string& bytes_;
  std::size_t pos_ = 0;
};

/// Exchanges the results of a run's independent items (chains, members) over the chain ranks.
/// `local` has one entry per item, filled for the items that runs_here() (their results as bytes);
/// `error` is this process's failure, if any. Returns every item of this part on every rank (empty
/// strings for items of other parts). When any rank failed, every rank rethrows the failure of the
/// lowest failing rank with its message (InputError stays InputError, std::invalid_argument stays
/// std::invalid_argument), so no rank waits for a result that never comes.
std::vector<std::string> exchange_items(std::int64_t count, const std::vector<std::string>& local, std::exception_ptr error);
/// Whether the failure being handled was rethrown by exchange_items on every rank (then each rank
/// can exit normally); otherwise it happened on this rank alone, and a program with more than one
/// rank must end the run with Communicator::abort so that no rank waits for it.
bool failure_is_shared();
/// What a program's main does with a failed command: under mpirun, a failure every rank saw
/// (failure_is_shared) is printed by rank 0 alone and `code` returned; one this rank saw alone is
/// printed with the rank and ends every process (Communicator::abort), so none waits for it.
/// In one process: prints "error: message" and returns `code`.
int report_failure(const std::string& message, int code);

}  // namespace uqnn

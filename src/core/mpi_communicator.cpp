// The MPI communicator (compiled only with UQNN_MPI): MPI_Allgatherv for results, a rank-ordered
// sum for the sharded likelihood, MPI_Comm_split for the chains x shards grid, MPI_Abort.
#ifdef UQNN_HAVE_MPI
#include <mpi.h>

#include <iostream>
#include <numeric>
#include <stdexcept>

#include "uqnn/core/communicator.hpp"

namespace uqnn {

namespace {

void check(int code, const char* what) {
  if (code != MPI_SUCCESS) throw std::runtime_error(std::string("MPI: ") + what + " failed");
}

class MpiCommunicator : public Communicator {
 public:
  /// Owns `comm` (freed in the destructor) unless it is MPI_COMM_WORLD.
  explicit MpiCommunicator(MPI_Comm comm) : comm_(comm) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (comm_ != MPI_COMM_WORLD && !finalized) MPI_Comm_free(&comm_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  std::vector<std::string> all_gather(const std::string& bytes) const override {
    // Sizes first, then the bytes (MPI counts are int: a result over 2 GB is refused, not truncated).
    if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
      throw std::runtime_error("MPI: a rank's result exceeds 2 GB");
    int mine = static_cast<int>(bytes.size());
    std::vector<int> sizes(static_cast<std::size_t>(size_)), offsets(static_cast<std::size_t>(size_));
    check(MPI_Allgather(&mine, 1, MPI_INT, sizes.data(), 1, MPI_INT, comm_), "MPI_Allgather");
    long total = 0;
    for (int r = 0; r < size_; ++r) {
      offsets[static_cast<std::size_t>(r)] = static_cast<int>(total);
      total += sizes[static_cast<std::size_t>(r)];
    }
    if (total > std::numeric_limits<int>::max()) throw std::runtime_error("MPI: the gathered results exceed 2 GB");
    std::string all(static_cast<std::size_t>(total), '\0');
    check(MPI_Allgatherv(bytes.data(), mine, MPI_CHAR, all.data(), sizes.data(), offsets.data(), MPI_CHAR, comm_),
          "MPI_Allgatherv");
    std::vector<std::string> out;
    for (int r = 0; r < size_; ++r)
      out.push_back(all.substr(static_cast<std::size_t>(offsets[static_cast<std::size_t>(r)]),
                               static_cast<std::size_t>(sizes[static_cast<std::size_t>(r)])));
    return out;
  }

  void all_reduce_sum(std::span<double> values) const override {
    if (size_ == 1) return;
    // Gather every rank's terms and add them in rank order on every rank: bitwise the same sum on
    // all ranks and in every run (MPI_Allreduce's order can depend on the algorithm it picks).
    const int n = static_cast<int>(values.size());
    thread_local std::vector<double> all;
    all.resize(values.size() * static_cast<std::size_t>(size_));
    check(MPI_Allgather(values.data(), n, MPI_DOUBLE, all.data(), n, MPI_DOUBLE, comm_), "MPI_Allgather");
    for (std::size_t i = 0; i < values.size(); ++i) {
      double sum = all[i];
      for (int r = 1; r < size_; ++r) sum += all[static_cast<std::size_t>(r) * values.size() + i];
      values[i] = sum;
    }
  }

  std::shared_ptr<Communicator> split(int color, int key) const override {
    MPI_Comm sub;
    check(MPI_Comm_split(comm_, color, key, &sub), "MPI_Comm_split");
    return std::make_shared<MpiCommunicator>(sub);
  }

  [[noreturn]] void abort(const std::string& message, int code) const override {
    std::cerr << message << std::endl;
    MPI_Abort(MPI_COMM_WORLD, code);
    std::abort();  // MPI_Abort does not return
  }

 private:
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
};

}  // namespace

std::shared_ptr<const Communicator> make_mpi_world_communicator() { return std::make_shared<MpiCommunicator>(MPI_COMM_WORLD); }

}  // namespace uqnn
#endif

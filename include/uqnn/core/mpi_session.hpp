#pragma once
/// @file MpiSession: MPI_Init / MPI_Finalize for a program's main (the library never starts MPI).
///
///     int main(int argc, char** argv) { uqnn::MpiSession mpi(argc, argv); ... }
///
/// With UQNN_MPI it initialises MPI (MPI_THREAD_SERIALIZED: chains run on threads, MPI is called
/// by one thread at a time) and installs MPI_COMM_WORLD as world_communicator(). Without it, a
/// program started by mpirun with more than one process stops with a message (each process would
/// run the whole fit and write the same files).
namespace uqnn {

class MpiSession {
 public:
  MpiSession(int& argc, char**& argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  /// Whether this build has MPI (UQNN_MPI).
  static bool available();
};

}  // namespace uqnn

// MpiSession: MPI's start and end when the build has MPI (UQNN_MPI), a check otherwise.
#include "uqnn/core/mpi_session.hpp"

#include <cstdlib>
#include <iostream>
#include <string>

#include "uqnn/core/communicator.hpp"

#ifdef UQNN_HAVE_MPI
#include <mpi.h>
#endif

namespace uqnn {

#ifdef UQNN_HAVE_MPI
std::shared_ptr<const Communicator> make_mpi_world_communicator();  // mpi_communicator.cpp

MpiSession::MpiSession(int& argc, char**& argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  set_world_communicator(make_mpi_world_communicator());
}

MpiSession::~MpiSession() {
  set_world_communicator(std::make_shared<SerialCommunicator>());
  MPI_Finalize();
}

bool MpiSession::available() { return true; }
#else
MpiSession::MpiSession(int&, char**&) {
  // Started by mpirun (Open MPI, MPICH / Slurm's PMI) with several processes, in a build without MPI.
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char* size = std::getenv(name); size && std::atoi(size) > 1) {
      std::cerr << "error: uqnn was built without MPI (CMake option UQNN_MPI=OFF or no libopenmpi-dev) but started by mpirun "
                   "with " << size << " processes; rebuild with MPI or run one process\n";
      std::exit(2);
    }
}

MpiSession::~MpiSession() = default;

bool MpiSession::available() { return false; }
#endif

}  // namespace uqnn

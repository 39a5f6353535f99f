#pragma once
// The Communicator over MPI (sweep.hpp). Only this file and the CLI include
// <mpi.h>; the library memsweep_mpi holds the implementation.

#include "memsweep/sweep.hpp"

#include <mpi.h>

#include <memory>

namespace memsweep {

// Starts MPI for the process (MPI_THREAD_FUNNELED: only the thread that
// called it uses MPI) and ends it when destroyed.
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
};

// Messages on `comm` (not owned; duplicated, so that memsweep's messages
// never match anyone else's).
std::unique_ptr<Communicator> make_mpi_communicator(MPI_Comm comm);

}  // namespace memsweep

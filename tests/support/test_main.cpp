// Test entry point. MPI is initialised for every test so that the [mpi] tests
// can run under `mpirun -np W`; ranks other than 0 print nothing, and each
// rank's result decides mpirun's exit status.
#define CATCH_CONFIG_RUNNER
#include <mpi.h>

#include <cstdio>

#include "tests/support/catch.h"

int main(int argc, char** argv) {
  // Threads: the MPI communicator's progress thread calls MPI beside the main one.
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0 && !freopen("/dev/null", "w", stdout)) return 1;
  int failed = Catch::Session().run(argc, argv);
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any_failed ? 1 : 0;
}

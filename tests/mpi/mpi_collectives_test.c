/* efacoll_mpi_tests: run under mpirun with libefacoll.so preloaded. Every case makes the same
 * call through MPI_X (efacoll's interposer) and PMPI_X (the MPI library) on separate buffers
 * and compares the results; with efacoll active, the regular cases must also be counted as
 * run by efacoll and the pass-through cases as passed to MPI (efacoll_get_counters).
 *
 * Prints one line per failing check and, on rank 0, "N passed, M failed" (checks summed over
 * ranks). Exit code 0 only if nothing failed. EFACOLL_MPI_TEST_QUICK=1 runs fewer cases.
 *
 * efacoll_mpi_tests --fatal=<collective>:<bad input> makes that one bad call under
 * MPI_ERRORS_ARE_FATAL instead: the job must abort (mpi_error_cases.c). */
#include <stdio.h>
#include <string.h>

#include "mpi_cases.h"

static void phase(const char* what, double* t0) {
  /* Keep the ranks together so that a hang shows up at a known phase. */
  PMPI_Barrier(MPI_COMM_WORLD);
  if (g_test.world_rank == 0) {
    double t = MPI_Wtime();
    printf("  %-28s %.2f s\n", what, t - *t0);
    fflush(stdout);
    *t0 = t;
  }
}

int main(int argc, char** argv) {
  if (MPI_Init(&argc, &argv) != MPI_SUCCESS) return 2;
  /* Errors on MPI_COMM_NULL are raised on MPI_COMM_WORLD's handler. */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  tu_init();
  if (argc > 1 && strncmp(argv[1], "--fatal=", 8) == 0) {
    int rc = fatal_error_case(argv[1] + 8);
    MPI_Finalize();
    return rc;
  }
  double t0 = MPI_Wtime();
  if (g_test.world_rank == 0) {
    printf("efacoll_mpi_tests: %d ranks%s\n", g_test.world_size, g_test.quick ? " (quick)" : "");
  }

  reduction_cases_full(MPI_COMM_WORLD, "world");
  phase("reductions on world", &t0);
  allgather_cases(MPI_COMM_WORLD, "world", 1);
  phase("allgather on world", &t0);
  passthrough_cases(MPI_COMM_WORLD, "world");
  intercomm_cases();
  phase("pass-through", &t0);
  error_cases(MPI_COMM_WORLD, "world");
  intercomm_error_cases();
  phase("bad arguments", &t0);
  communicator_cases();
  phase("communicators", &t0);
  large_count_cases();
  phase("large-count forms", &t0);
  nonblocking_cases(MPI_COMM_WORLD);
  phase("nonblocking forms", &t0);
  persistent_cases(MPI_COMM_WORLD);
  phase("persistent forms", &t0);
  engine_counted_check();

  int rc = tu_finish();
  MPI_Finalize();
  return rc;
}

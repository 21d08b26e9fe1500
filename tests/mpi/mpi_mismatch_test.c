/* Ranks that make different calls, under mpirun with efacoll preloaded: rank 1 calls with another
 * op, another type, another count, or another collective. Every rank must return an error
 * (MPI_ERRORS_RETURN) with a message, none a result and none hang; the text of some rank must say
 * what differed. Then the next valid call on the same communicator must give the exact sum:
 * after every case, except over tcp where the messages differ in shape (a message longer than
 * its receive can cost tcp;ofi_rxm the connection that carried it).
 * Usage: mpi_mismatch_test [CASE...] (default: every case). Exit 0 pass, 1 fail. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_error_strings.h"
#include "mpi_test_util.h"

enum { kCount = 4000 };

struct Case {
  const char* name;
  int same_shape;
  const char* said; /* in some rank's message */
};

static const struct Case kCases[] = {
    {"op", 1, "with max"},
    {"type", 1, "of float32"},
    {"count", 0, "different count"},
    /* "rank 1 called allgather ..." or, from rank 1, "..., this rank allgather ..." */
    {"collective", 0, "allgather of"},
};

/* Rank 1's call differs as the case says; the others call allreduce of kCount ints with sum. */
static int odd_call(const char* name, int rank, int size, int* in, int* out, MPI_Comm comm) {
  if (rank != 1) return MPI_Allreduce(in, out, kCount, MPI_INT, MPI_SUM, comm);
  if (!strcmp(name, "op")) return MPI_Allreduce(in, out, kCount, MPI_INT, MPI_MAX, comm);
  if (!strcmp(name, "type")) return MPI_Allreduce(in, out, kCount, MPI_FLOAT, MPI_SUM, comm);
  if (!strcmp(name, "count")) return MPI_Allreduce(in, out, 3 * kCount, MPI_INT, MPI_SUM, comm);
  return MPI_Allgather(in, kCount / size, MPI_INT, out, kCount / size, MPI_INT, comm);
}

static int run_case(const struct Case* c, int rank, int size) {
  MPI_Comm comm;
  PMPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  int* in = calloc(3 * kCount, sizeof(int));
  int* out = calloc(3 * kCount, sizeof(int));
  for (int i = 0; i < 3 * kCount; ++i) in[i] = rank + 1;
  int failed = 0;
  const double t0 = MPI_Wtime();
  const int rc = odd_call(c->name, rank, size, in, out, comm);
  const double seconds = MPI_Wtime() - t0;
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  if (rc != MPI_SUCCESS) MPI_Error_string(rc, text, &len);
  if (rc == MPI_SUCCESS) {
    printf("FAIL mismatch/%s: rank %d returned MPI_SUCCESS\n", c->name, rank);
    failed = 1;
  }
  /* Which rank named the difference: gathered with PMPI, outside efacoll. */
  int named = strstr(text, c->said) != NULL, any_named = 0;
  PMPI_Allreduce(&named, &any_named, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0 && !any_named && !mpi_takes_error_strings()) {
    printf("note mismatch/%s: this MPI's error strings cannot carry efacoll's text (see its log "
           "lines)\n", c->name);
  } else if (rank == 0 && !any_named) {
    printf("FAIL mismatch/%s: no rank's error says \"%s\"; rank 0's: %s\n", c->name, c->said, text);
    failed = 1;
  }
  printf("%s mismatch/%s rank %d: %.2f s: %s\n", failed ? "FAIL" : "ok", c->name, rank, seconds,
         text);
  const char* provider = getenv("EFACOLL_PROVIDER");
  if (c->same_shape || !provider || strcmp(provider, "tcp") != 0) {
    PMPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < kCount; ++i) in[i] = rank + 1;
    const int again = MPI_Allreduce(in, out, kCount, MPI_INT, MPI_SUM, comm);
    const int want = size * (size + 1) / 2;
    if (again != MPI_SUCCESS || out[0] != want || out[kCount - 1] != want) {
      printf("FAIL mismatch/%s: rank %d: the next call gave rc %d, %d (want %d)\n", c->name, rank,
             again, out[0], want);
      failed = 1;
    }
  }
  free(in);
  free(out);
  PMPI_Comm_free(&comm);
  return failed;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int failed = 0;
  for (size_t i = 0; i < sizeof(kCases) / sizeof(kCases[0]); ++i) {
    int wanted = argc == 1;
    for (int a = 1; a < argc; ++a) wanted |= !strcmp(argv[a], kCases[i].name);
    if (!wanted) continue;
    failed |= run_case(&kCases[i], rank, size);
    fflush(stdout);
    PMPI_Barrier(MPI_COMM_WORLD);
  }
  if (!tu_efacoll_ran()) failed = 1;
  int any = 0;
  PMPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any ? 1 : 0;
}

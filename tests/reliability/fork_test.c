/* fork_test: a process that forks after MPI_Init, as Python data loaders and subprocess do,
 * keeps running collectives exactly. Each rank forks, in turn, a child that exits at once
 * (exit(), so its atexit handlers and destructors run), one that execs a trivial program, one
 * that only computes, one that writes into buffers efacoll registered for earlier calls, and
 * one that computes while the parent keeps calling; after each, the parent makes random calls
 * compared with PMPI, and the buffers the child wrote are checked for being still the parent's.
 * At the end a new communicator is made and used. With --memory gpu the random calls' buffers
 * are on the GPU (as in soak_test's), as in a training process whose data loaders fork.
 *
 * The children never call MPI. A child writing into registered memory may die of SIGSEGV where
 * libfabric's fork-safe mode keeps registered pages from children (kernels before 5.13): the
 * parent must live on either way. Exit 1 on a mismatch, an error, or a child failing otherwise. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mpi_test_util.h"
#include "random_call.h"

enum { kCallsBetween = 15, kPersistent = 1 << 18 };

typedef enum {
  CHILD_EXIT,
  CHILD_EXEC,
  CHILD_COMPUTE,
  CHILD_WRITE_REGISTERED,
  CHILD_OVERLAP,
  CHILD_KINDS
} child_kind;

static const char* const kChildNames[CHILD_KINDS] = {
    "exits at once", "execs a program", "computes", "writes registered memory",
    "computes while the parent calls"};

/* A child takes its parent's heap without the parent's other threads, so LeakSanitizer (in the
 * sanitizer build) would call much of it leaked when an exiting child checks: children do not. */
static volatile int g_in_child = 0;
__attribute__((used)) int __lsan_is_turned_off(void) { return g_in_child; }

static int compute(long n) {
  double* v = malloc(sizeof(double) * (size_t)n);
  double sum = 0;
  for (long i = 0; i < n; ++i) v[i] = (double)i;
  for (long i = 0; i < n; ++i) sum += v[i];
  free(v);
  return sum == (double)n * (double)(n - 1) / 2 ? 0 : 1;
}

static void child(child_kind kind, unsigned char* persistent) {
  g_in_child = 1;
  switch (kind) {
    case CHILD_EXIT:
      exit(0);
    case CHILD_EXEC:
      execlp("true", "true", (char*)NULL);
      _exit(126);
    case CHILD_WRITE_REGISTERED:
      memset(persistent, 0x5A, kPersistent);
      exit(0);
    case CHILD_OVERLAP:
      _exit(compute(20000000));
    default:
      _exit(compute(1000000));
  }
}

/* kCallsBetween random calls on comm, compared with PMPI. */
static void calls_between(MPI_Comm comm, long* step, int gpu, const char* who, rk_tally* tally) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  for (long k = 0; k < kCallsBetween; ++k) {
    rk_call c;
    const uint64_t h = tu_hash(7, (uint64_t)(*step)++, 0);
    rk_draw(h, size, 1 << 20, &c);
    if (gpu) rk_draw_gpu_memory(h, &c);
    rk_run_counted(&c, comm, who, tally, 20);
  }
}

/* An allreduce on the long-lived buffer: efacoll registers it for the call. */
static void persistent_call(unsigned char* buf, int rank, long* mismatches, long* errors) {
  static unsigned char want[kPersistent];
  const int n = kPersistent / (int)sizeof(int);
  for (int i = 0; i < n; ++i) ((int*)buf)[i] = (i % 1000) + rank;
  int rc = MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  for (int i = 0; i < n; ++i) ((int*)want)[i] = (i % 1000) + rank;
  int rc_ref = PMPI_Allreduce(MPI_IN_PLACE, want, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS || rc_ref != MPI_SUCCESS) {
    ++*errors;
  } else if (memcmp(buf, want, kPersistent) != 0) {
    ++*mismatches;
    printf("FAIL rank %d: allreduce on the registered buffer differs from PMPI\n", rank);
  }
}

int main(int argc, char** argv) {
  if (MPI_Init(&argc, &argv) != MPI_SUCCESS) return 2;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int gpu = argc == 3 && !strcmp(argv[1], "--memory") && !strcmp(argv[2], "gpu");
  if (argc != 1 && !gpu) {
    if (rank == 0) fprintf(stderr, "usage: fork_test [--memory gpu]\n");
    MPI_Finalize();
    return 2;
  }
  if (gpu && !rk_gpu_ready()) {
    MPI_Finalize();
    return 77;
  }
  char who[64];
  snprintf(who, sizeof(who), "rank %d", rank);
  rk_tally tally = {0, 0, 0};
  long step = 0, child_failures = 0, segv_children = 0;
  unsigned char* persistent = malloc(kPersistent);

  calls_between(MPI_COMM_WORLD, &step, gpu, who, &tally);
  for (int kind = 0; kind < CHILD_KINDS; ++kind) {
    persistent_call(persistent, rank, &tally.mismatches, &tally.errors);
    unsigned char before[64];
    memcpy(before, persistent, sizeof(before));
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
      perror("fork");
      child_failures++;
      continue;
    }
    if (pid == 0) child((child_kind)kind, persistent);
    if (kind != CHILD_OVERLAP) {
      int status = 0;
      waitpid(pid, &status, 0);
      pid = 0;
      const int segv = WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV;
      if (kind == CHILD_WRITE_REGISTERED && segv) {
        segv_children++;
      } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        printf("FAIL rank %d: the child that %s ended with status 0x%x\n", rank, kChildNames[kind],
               status);
        child_failures++;
      }
    }
    if (memcmp(before, persistent, sizeof(before)) != 0) {
      printf("FAIL rank %d: the child's writes reached the parent's buffer\n", rank);
      child_failures++;
    }
    calls_between(MPI_COMM_WORLD, &step, gpu, who, &tally);
    persistent_call(persistent, rank, &tally.mismatches, &tally.errors);
    if (pid > 0) {
      int status = 0;
      waitpid(pid, &status, 0);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        printf("FAIL rank %d: the child that %s ended with status 0x%x\n", rank, kChildNames[kind],
               status);
        child_failures++;
      }
    }
  }
  free(persistent);
  /* A communicator made after the children came and went: its set-up exchanges and inserts
   * addresses again. */
  MPI_Comm late;
  MPI_Comm_dup(MPI_COMM_WORLD, &late);
  calls_between(late, &step, gpu, who, &tally);
  MPI_Comm_free(&late);

  long mine[5] = {tally.calls, tally.mismatches, tally.errors, child_failures, segv_children};
  long total[5];
  PMPI_Allreduce(mine, total, 5, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  const int ran = tu_efacoll_ran();
  const int failed = total[1] || total[2] || total[3] || !ran;
  if (rank == 0) {
    printf("RESULT children forked %d per rank, calls %ld (summed over ranks), mismatches %ld "
           "(expected 0), errors %ld (expected 0), failed children %ld, children killed by "
           "SIGSEGV writing registered memory %ld, hangs 0: %s\n",
           CHILD_KINDS, total[0], total[1], total[2], total[3], total[4],
           failed ? "FAILED" : "passed");
    fflush(stdout);
  }
  MPI_Finalize();
  return failed ? 1 : 0;
}

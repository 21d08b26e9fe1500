/* A communicator's first call meets the other ranks through the host MPI (their agreement on
 * where its calls run, then efacoll's set-up of it). Here the last
 * rank does not make that call in time: in case "skip" it waits in a barrier on MPI_COMM_WORLD
 * and makes it only after the others gave up, in case "finalize" it goes straight on to
 * MPI_Finalize. The other ranks (MPI_ERRORS_RETURN) must get an error within EFACOLL_TIMEOUT,
 * saying why, instead of waiting as long as MPI would; the next call on that communicator must
 * fail at once too, never reach MPI (where it could match the exchange left pending);
 * MPI_COMM_WORLD must still work; and the late rank's call, which completes the exchange left
 * pending, must end in an error within the timeout too, not hang or crash.
 * In case "stopped" (2 ranks) the late rank is late because it stopped the other (SIGSTOP) while
 * that one waited in the exchange, for longer than the timeout: the stop is not lateness, and the
 * call, made by the late rank soon after it resumed the other, must complete, exact.
 * Usage: mpi_setup_timeout_test skip|finalize|stopped. Exit 0 pass, 1 fail. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mpi_test_util.h"

enum { kTimeoutSeconds = 3, kCount = 1000 };

static int expect_error(const char* what, int rc, double seconds, double at_least, double at_most,
                        const char* said, int rank) {
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  if (rc != MPI_SUCCESS) MPI_Error_string(rc, text, &len);
  int failed = 0;
  if (rc == MPI_SUCCESS) {
    printf("FAIL %s: rank %d returned MPI_SUCCESS\n", what, rank);
    failed = 1;
  } else if (seconds < at_least || seconds > at_most) {
    printf("FAIL %s: rank %d erred after %.2f s, not within [%.1f, %.1f] s\n", what, rank, seconds,
           at_least, at_most);
    failed = 1;
  } else if (!strstr(text, said)) {
    printf("FAIL %s: rank %d's error does not say \"%s\": %s\n", what, rank, said, text);
    failed = 1;
  }
  printf("%s %s rank %d: %.2f s: %s\n", failed ? "FAIL" : "ok", what, rank, seconds, text);
  return failed;
}

/* MPI_COMM_WORLD is a communicator of its own: its calls still work, exactly (every rank's `in`
 * is rank + i). */
static int world_allreduce_exact(int rank, int size, const int* in, int* out) {
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const int rc = MPI_Allreduce(in, out, kCount, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS) {
    printf("FAIL setup_timeout/world: rank %d: rc %d\n", rank, rc);
    return 1;
  }
  for (int i = 0; i < kCount; ++i) {
    const int want = size * (size - 1) / 2 + size * i;
    if (out[i] != want) {
      printf("FAIL setup_timeout/world: rank %d: [%d] = %d, want %d\n", rank, i, out[i], want);
      return 1;
    }
  }
  return 0;
}

/* The ranks that make the call; the last rank has left (finalize) or waits in a barrier (skip).
 * Named for tests/sanitize/lsan.supp: the communicator and the host MPI's state of the exchange
 * left pending here can never be freed. */
static int members_left_waiting(int rank, int size, int finalize) {
  MPI_Comm comm;
  MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  int in[kCount], out[kCount];
  for (int i = 0; i < kCount; ++i) in[i] = rank + i;
  memcpy(out, in, sizeof(out));
  double t0 = MPI_Wtime();
  int rc = MPI_Allreduce(MPI_IN_PLACE, out, kCount, MPI_INT, MPI_SUM, comm);
  int failed = expect_error("setup_timeout/first-call", rc, MPI_Wtime() - t0, kTimeoutSeconds - 0.5,
                            kTimeoutSeconds + 10, "not every member joined", rank);
  t0 = MPI_Wtime();
  rc = MPI_Allreduce(in, out, kCount, MPI_INT, MPI_SUM, comm);
  failed |= expect_error("setup_timeout/next-call", rc, MPI_Wtime() - t0, 0, 1, "unusable", rank);
  /* The communicator stays unfreed: MPI_Comm_free is collective, and its exchange is pending. */
  if (!finalize) {
    PMPI_Barrier(MPI_COMM_WORLD);
    failed |= world_allreduce_exact(rank, size, in, out);
  }
  return failed;
}

/* The last rank: it splits with the others (MPI_Comm_split is the host MPI's), then finalizes, or
 * joins the others on MPI_COMM_WORLD and makes the first call on the new communicator last. */
static int late_member(int rank, int size, int finalize) {
  MPI_Comm comm;
  MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &comm);
  if (finalize) {
    MPI_Comm_free(&comm);
    return 0;
  }
  PMPI_Barrier(MPI_COMM_WORLD);
  int in[kCount], out[kCount];
  for (int i = 0; i < kCount; ++i) in[i] = rank + i;
  int failed = world_allreduce_exact(rank, size, in, out);
  /* Its set-up exchange meets the one the others left pending; the call itself meets nobody. */
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  const double t0 = MPI_Wtime();
  const int rc = MPI_Allreduce(in, out, kCount, MPI_INT, MPI_SUM, comm);
  failed |= expect_error("setup_timeout/late-member", rc, MPI_Wtime() - t0, kTimeoutSeconds - 0.5,
                         kTimeoutSeconds + 10, "EFACOLL_TIMEOUT", rank);
  MPI_Comm_free(&comm);
  return failed;
}

static void sleep_seconds(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&ts, NULL);
}

/* Case "stopped": rank 0 makes the first call; rank 1 lets it reach the exchange, stops it for
 * the timeout and a second more, resumes it and makes the call half a second later. Before the
 * exchange forgave a stop, rank 0 failed on resuming ("not every member joined"). */
static int exchange_outlives_a_stop(int rank, int size) {
  int pid = (int)getpid(), pids[2] = {0, 0};
  PMPI_Allgather(&pid, 1, MPI_INT, pids, 1, MPI_INT, MPI_COMM_WORLD);
  MPI_Comm comm;
  MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  if (rank == 1) {
    sleep_seconds(1.0);
    kill((pid_t)pids[0], SIGSTOP);
    sleep_seconds(kTimeoutSeconds + 1.0);
    kill((pid_t)pids[0], SIGCONT);
    sleep_seconds(0.5);
  }
  int in[kCount], out[kCount];
  for (int i = 0; i < kCount; ++i) in[i] = rank + i;
  const double t0 = MPI_Wtime();
  const int rc = MPI_Allreduce(in, out, kCount, MPI_INT, MPI_SUM, comm);
  const double seconds = MPI_Wtime() - t0;
  int failed = rc != MPI_SUCCESS;
  if (failed) {
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, text, &len);
    printf("FAIL setup_timeout/stopped: rank %d erred after %.2f s: %s\n", rank, seconds, text);
  }
  for (int i = 0; i < kCount && !failed; ++i) {
    const int want = size * (size - 1) / 2 + size * i;
    if (out[i] != want) {
      printf("FAIL setup_timeout/stopped: rank %d: [%d] = %d, want %d\n", rank, i, out[i], want);
      failed = 1;
    }
  }
  if (!failed) printf("ok setup_timeout/stopped rank %d: exact after %.2f s\n", rank, seconds);
  MPI_Comm_free(&comm);
  return failed;
}

int main(int argc, char** argv) {
  if (argc != 2 ||
      (strcmp(argv[1], "skip") && strcmp(argv[1], "finalize") && strcmp(argv[1], "stopped"))) {
    fprintf(stderr, "usage: mpi_setup_timeout_test skip|finalize|stopped\n");
    return 2;
  }
  const int finalize = !strcmp(argv[1], "finalize");
  const int stopped = !strcmp(argv[1], "stopped");
  char timeout[16];
  snprintf(timeout, sizeof(timeout), "%d", kTimeoutSeconds);
  setenv("EFACOLL_TIMEOUT", timeout, 1); /* read at MPI_Init */
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int failed = 0;
  /* Each rank alone: the late rank of "finalize" makes no collective call at the end. */
  const char* absent = tu_efacoll_absence();
  if (absent) {
    printf("FAIL setup_timeout rank %d: %s\n", rank, absent);
    failed = 1;
  }
  if (stopped) {
    failed |= size == 2 ? exchange_outlives_a_stop(rank, size) : 1;
    if (size != 2 && rank == 0) printf("FAIL setup_timeout/stopped: needs 2 ranks\n");
  } else if (rank == size - 1) {
    failed |= late_member(rank, size, finalize);
  } else {
    failed |= members_left_waiting(rank, size, finalize);
  }
  fflush(stdout);
  if (!finalize) {
    int any = 0;
    PMPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    failed = any;
  }
  MPI_Finalize();
  return failed ? 1 : 0;
}

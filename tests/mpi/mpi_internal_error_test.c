/* An exception inside efacoll reaches the C boundary as an MPI error raised through the
 * communicator's error handler, with efacoll's message, never as a crash or a silent return.
 * Made real, not injected: with the address space limited to what the process holds plus a
 * little, a host allreduce whose engine scratch (as large as the vector) cannot be allocated
 * throws std::bad_alloc inside the engine, before any message moves. Every rank must see its
 * handler called once with MPI_ERR_NO_MEM and a message naming efacoll and the call; with the
 * limit lifted, the next call on the same communicator must complete, exact.
 * 2 ranks, EFACOLL_HOST_BUFFERS=1. Exit 0 pass, 1 fail. */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "mpi_test_util.h"

enum { kCount = 32 << 20 }; /* floats: 128 MiB, the engine's ring scratch as large */

static int handler_calls = 0, handler_code = MPI_SUCCESS;

static void record_error(MPI_Comm* comm, int* code, ...) {
  (void)comm;
  ++handler_calls;
  handler_code = *code;
}


int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, failed = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const char* absent = tu_efacoll_absence();
  if (absent) {  /* the host MPI alone proves nothing here */
    printf("FAIL internal_error rank %d: %s\n", rank, absent);
    MPI_Finalize();
    return 1;
  }
  MPI_Errhandler recorder;
  MPI_Comm_create_errhandler(record_error, &recorder);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, recorder);
  float* in = malloc(sizeof(float) * kCount);
  float* out = malloc(sizeof(float) * kCount);
  if (!in || !out) {
    printf("FAIL internal_error: rank %d: no memory for the buffers\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (int i = 0; i < kCount; ++i) in[i] = (float)(i % 1000 + rank);
  /* A small call first: the communicator, its transport and small scratch exist. */
  MPI_Allreduce(in, out, 1000, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  memset(out, 0, sizeof(float) * kCount);

  struct rlimit saved, tight;
  getrlimit(RLIMIT_AS, &saved);
  tight = saved;
  tight.rlim_cur = tu_proc_kib_field("/proc/self/status", "VmSize") + (64ull << 20);
  if (setrlimit(RLIMIT_AS, &tight) != 0) {
    printf("FAIL internal_error: rank %d: setrlimit failed\n", rank);
    failed = 1;
  }
  const int rc = MPI_Allreduce(in, out, kCount, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  setrlimit(RLIMIT_AS, &saved);

  int error_class = MPI_SUCCESS, len = 0;
  char text[MPI_MAX_ERROR_STRING] = "";
  if (rc != MPI_SUCCESS) {
    MPI_Error_class(rc, &error_class);
    MPI_Error_string(rc, text, &len);
  }
  if (rc == MPI_SUCCESS) {
    printf("FAIL internal_error: rank %d: the call succeeded under the limit\n", rank);
    failed = 1;
  } else if (error_class != MPI_ERR_NO_MEM) {
    printf("FAIL internal_error: rank %d: class %d, not MPI_ERR_NO_MEM: %s\n", rank, error_class,
           text);
    failed = 1;
  } else if (handler_calls != 1 || handler_code != rc) {
    printf("FAIL internal_error: rank %d: the handler was called %d times (code %d, returned %d)\n",
           rank, handler_calls, handler_code, rc);
    failed = 1;
  } else if (!strstr(text, "efacoll") || !strstr(text, "MPI_Allreduce") ||
             !strstr(text, "memory")) {
    printf("FAIL internal_error: rank %d: the message does not say efacoll, the call and why: %s\n",
           rank, text);
    failed = 1;
  } else {
    printf("ok internal_error rank %d: %s\n", rank, text);
  }

  /* The communicator still works, exactly. */
  const int rc2 = MPI_Allreduce(in, out, kCount, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  int wrong = rc2 != MPI_SUCCESS;
  for (int i = 0; i < kCount && !wrong; ++i) wrong = out[i] != (float)(2 * (i % 1000) + 1);
  if (wrong) {
    printf("FAIL internal_error/after: rank %d: rc %d or a wrong result\n", rank, rc2);
    failed = 1;
  }
  free(in);
  free(out);
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  /* Proves something about efacoll only where efacoll ran the calls. */
  const int ran = tu_efacoll_ran();
  MPI_Finalize();
  return any || !ran ? 1 : 0;
}

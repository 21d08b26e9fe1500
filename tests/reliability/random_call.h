/* One random collective made through MPI_X (efacoll, when preloaded) and PMPI_X on the same
 * inputs, the results compared. No global state: threads call it at once on their own
 * communicators. Shared by the soak, threads and fork tests. The PMPI_X reference always runs
 * on host memory; MPI_X's buffers may be on the GPU (gpu_memory.h). */
#ifndef EFACOLL_RANDOM_CALL_H
#define EFACOLL_RANDOM_CALL_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "mpi_cases.h"

typedef enum {
  RK_ALLREDUCE,
  RK_ALLGATHER,
  RK_REDUCE_SCATTER,
  RK_REDUCE_SCATTER_BLOCK,
  RK_KINDS
} rk_kind;

/* Where MPI_X's send or receive buffer lives. */
typedef enum { RK_HOST, RK_DEVICE, RK_MANAGED, RK_MEMORY_KINDS } rk_memory;

typedef struct {
  rk_kind kind;
  const test_type* type;
  const test_op* op; /* an allowed pair; for allgather it only shapes the data */
  /* allreduce: the vector; reduce_scatter: the total; allgather and reduce_scatter_block: each
   * rank's block */
  int count;
  int inplace;
  uint64_t seed; /* the data */
  rk_memory send_memory, recv_memory;
  /* MPI_Ixxx then MPI_Wait (one call in three): the same on every member, since blocking and
   * nonblocking collectives never match each other. */
  int nonblocking;
} rk_call;

/* The call drawn from h: members of a communicator passing the same h and size draw the same.
 * Its largest buffer spans 0 ... max_bytes, log-uniformly, with an empty call now and then. */
void rk_draw(uint64_t h, int comm_size, size_t max_bytes, rk_call* call);
/* gm_open (gpu_memory.h) on every rank of MPI_COMM_WORLD, each on its node's GPU local rank %
 * GPUs: 1 where all have one; else 0, and each rank without one prints why ("SKIP: no GPU"). */
int rk_gpu_ready(void);
/* Draws where the buffers live from h, GPU memory mostly: device memory, managed memory, and
 * host memory for one of them now and then (after rk_gpu_ready). */
void rk_draw_gpu_memory(uint64_t h, rk_call* call);
void rk_describe(const rk_call* call, char* out, size_t n);

enum { RK_OK = 0, RK_MISMATCH = 1, RK_ERROR = 2 };
/* MPI_X, then PMPI_X on copies of the same inputs; RK_MISMATCH or RK_ERROR with details. */
int rk_run(const rk_call* call, MPI_Comm comm, char* why, size_t n);

/* Tallies of one thread or process. */
typedef struct {
  long calls, mismatches, errors;
} rk_tally;

/* rk_run with the outcome counted; the first `max_reports` failures printed with `who`. */
void rk_run_counted(const rk_call* call, MPI_Comm comm, const char* who, rk_tally* tally,
                    long max_reports);

#endif

/* The batch tuner_bench and algo_steadiness time, so that both judge algorithms alike: the
 * ranks meet (PMPI_Barrier), then run a few calls of one collective on float data, timed
 * together, and every rank takes the slowest rank's mean time per call. */
#pragma once
#include <mpi.h>
#include <stdlib.h>

/* coll: 0 allreduce (sum), 1 allgather, 2 reduce_scatter_block (sum); count: the whole vector,
 * a multiple of nranks for the last two. */
static inline void bench_call(int coll, void* send, void* recv, size_t count, int nranks) {
  int n = (int)count;
  if (coll == 0)
    MPI_Allreduce(send, recv, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  else if (coll == 1)
    MPI_Allgather(send, n / nranks, MPI_FLOAT, recv, n / nranks, MPI_FLOAT, MPI_COMM_WORLD);
  else
    MPI_Reduce_scatter_block(send, recv, n / nranks, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

/* Calls a batch: enough that a small call's batch outlasts the ranks' skew, few where one
 * call takes milliseconds. */
static inline int bench_batch_iters(size_t count) {
  return count * 4 >= (4u << 20) ? 2 : count * 4 >= (64u << 10) ? 5 : 40;
}

/* One batch's mean time per call (us), slowest rank. */
static inline double bench_batch(int coll, void* send, void* recv, size_t count, int nranks) {
  const int iters = bench_batch_iters(count);
  PMPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) bench_call(coll, send, recv, count, nranks);
  double mine = (MPI_Wtime() - t0) / iters * 1e6, worst = 0;
  PMPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}

static inline int bench_cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* Sorts t. */
static inline double bench_median(double* t, int n) {
  qsort(t, n, sizeof(double), bench_cmp_double);
  return t[n / 2];
}

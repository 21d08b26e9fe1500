/* A small, unmodified MPI program: allreduce, allgather and reduce-scatter on a split
 * communicator and on MPI_COMM_WORLD, each result checked. Run it with libefacoll.so preloaded
 * and EFACOLL_DEBUG=INFO EFACOLL_STATS=1 to see what efacoll did. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int check(const char* what, long got, long want, int rank) {
  if (got == want) return 0;
  fprintf(stderr, "rank %d: %s = %ld, expected %ld\n", rank, what, got, want);
  return 1;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size, bad = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  enum { N = 1 << 20 };
  long* in = malloc(N * sizeof(long));
  long* out = malloc(N * sizeof(long));
  for (int i = 0; i < N; ++i) in[i] = rank + i;
  MPI_Allreduce(in, out, N, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  for (int i = 0; i < N && !bad; ++i) {
    bad |= check("allreduce", out[i], (long)size * (size - 1) / 2 + (long)size * i, rank);
  }

  int* gathered = malloc(size * sizeof(int));
  MPI_Allgather(&rank, 1, MPI_INT, gathered, 1, MPI_INT, MPI_COMM_WORLD);
  for (int r = 0; r < size && !bad; ++r) bad |= check("allgather", gathered[r], r, rank);

  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  int hsize;
  MPI_Comm_size(half, &hsize);
  double* vec = malloc(hsize * 1000 * sizeof(double));
  double mine[1000];
  for (int i = 0; i < hsize * 1000; ++i) vec[i] = 1.0;
  MPI_Reduce_scatter_block(vec, mine, 1000, MPI_DOUBLE, MPI_SUM, half);
  for (int i = 0; i < 1000 && !bad; ++i) bad |= check("reduce_scatter", (long)mine[i], hsize, rank);
  MPI_Comm_free(&half);

  int all_bad = 0;
  MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) printf("demo: %d ranks, results %s\n", size, all_bad ? "WRONG" : "correct");
  free(in); free(out); free(gathered); free(vec);
  MPI_Finalize();
  return all_bad;
}

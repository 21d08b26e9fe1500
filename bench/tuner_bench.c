/* tuner_bench: in one run, for each size, the tuner's choice against every forced algorithm
 * (efacoll_set_algo between measurements), on host buffers through efacoll's fabric path.
 * Prints time per algorithm (median of repeats, slowest rank), the tuner's pick and its time,
 * its ratio to the fastest forced one, and the model's prediction with its error.
 * Usage (library preloaded, EFACOLL_HOST_BUFFERS=1): tuner_bench [-c allreduce|allgather|
 * reduce_scatter] [-b MIN] [-e MAX] [-f FACTOR] [-r REPEATS] */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int (*set_algo_fn)(const char*);
typedef const char* (*last_algo_fn)(void);
typedef double (*last_pred_fn)(void);

static int coll = 0; /* 0 allreduce, 1 allgather, 2 reduce_scatter */

static void call(void* send, void* recv, size_t count, int nranks) {
  int n = (int)count;
  if (coll == 0)
    MPI_Allreduce(send, recv, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  else if (coll == 1)
    MPI_Allgather(send, n / nranks, MPI_FLOAT, recv, n / nranks, MPI_FLOAT, MPI_COMM_WORLD);
  else
    MPI_Reduce_scatter_block(send, recv, n / nranks, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* Median over repeats of a batch's mean time (us), slowest rank. */
static double measure(void* s, void* r, size_t count, int nranks, int repeats) {
  double t[64];
  call(s, r, count, nranks); /* warm-up (and the algorithm's first schedule) */
  int iters = count * 4 >= (4u << 20) ? 2 : count * 4 >= (64u << 10) ? 5 : 20;
  for (int k = 0; k < repeats && k < 64; ++k) {
    PMPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) call(s, r, count, nranks);
    double mine = (MPI_Wtime() - t0) / iters * 1e6, worst = 0;
    PMPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    t[k] = worst;
  }
  qsort(t, repeats, sizeof(double), cmp);
  return t[repeats / 2];
}

int main(int argc, char** argv) {
  size_t min_bytes = 8, max_bytes = (size_t)1 << 28, factor = 4;
  int repeats = 5, c;
  MPI_Init(&argc, &argv);
  while ((c = getopt(argc, argv, "c:b:e:f:r:")) != -1) {
    if (c == 'c')
      coll = !strcmp(optarg, "allgather") ? 1 : !strcmp(optarg, "reduce_scatter") ? 2 : 0;
    else if (c == 'b')
      min_bytes = strtoull(optarg, 0, 10);
    else if (c == 'e')
      max_bytes = strtoull(optarg, 0, 10);
    else if (c == 'f')
      factor = strtoull(optarg, 0, 10);
    else if (c == 'r')
      repeats = atoi(optarg);
  }
  int rank, nranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  set_algo_fn set_algo = (set_algo_fn)dlsym(RTLD_DEFAULT, "efacoll_set_algo");
  last_algo_fn last_algo = (last_algo_fn)dlsym(RTLD_DEFAULT, "efacoll_last_algorithm");
  last_pred_fn last_pred = (last_pred_fn)dlsym(RTLD_DEFAULT, "efacoll_last_predicted_us");
  if (!set_algo || !last_algo || !last_pred) {
    if (rank == 0) fprintf(stderr, "tuner_bench: libefacoll.so is not preloaded\n");
    MPI_Finalize();
    return 2;
  }
  const char* specs[3][3] = {{"allreduce:ring", "allreduce:tree", "allreduce:rd"},
                             {"allgather:ring", "", "allgather:rd"},
                             {"reduce_scatter:ring", "", "reduce_scatter:rh"}};
  float* s = malloc(max_bytes);
  float* r = malloc(max_bytes);
  for (size_t i = 0; i < max_bytes / sizeof(float); ++i) s[i] = (float)(i % 7);
  if (rank == 0) {
    printf("# tuner_bench: %s, %d ranks, float sum; us = median of %d repeats, slowest rank\n",
           coll == 0   ? "allreduce"
           : coll == 1 ? "allgather"
                       : "reduce_scatter",
           nranks, repeats);
    printf(
        "| size (B) | ring us | tree us | rd/rh us | tuner's pick | its us | pick / best | "
        "predicted us | model error |\n");
    printf("|---|---|---|---|---|---|---|---|---|\n");
  }
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= factor) {
    size_t count = bytes / sizeof(float);
    if (coll != 0) count -= count % nranks;
    if (count == 0) continue;
    double t[3] = {0, 0, 0}, best = 1e300;
    for (int a = 0; a < 3; ++a) {
      if (!specs[coll][a][0]) continue;
      set_algo(specs[coll][a]);
      t[a] = measure(s, r, count, nranks, repeats);
      if (t[a] < best) best = t[a];
    }
    set_algo("auto");
    double tuned = measure(s, r, count, nranks, repeats);
    const char* pick = last_algo();
    double predicted = last_pred();
    if (rank == 0) {
      char tree[32] = "-";
      if (t[1] > 0) snprintf(tree, sizeof(tree), "%.1f", t[1]);
      printf("| %zu | %.1f | %s | %.1f | %s | %.1f | %.2f | %.1f | %+.0f%% |\n",
             count * sizeof(float), t[0], tree, t[2], pick, tuned, tuned / best, predicted,
             (predicted - tuned) / tuned * 100);
    }
  }
  free(s);
  free(r);
  MPI_Finalize();
  return 0;
}

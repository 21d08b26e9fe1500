/* algo_steadiness: how steady this machine keeps the order of two forced algorithms, the floor
 * under tuner_bench's judgement (the tuner's pick within 10 % of the fastest, in each run).
 * In one run, for one collective and size, with tuner_bench's batches (PMPI_Barrier, then 40
 * calls up to 64 KiB, 5 below 4 MiB, 2 above, timed together; the slowest rank's mean):
 *  - windows: W windows one after the other, each R rounds of one batch of A and one of B;
 *    per window the medians and B's over A's;
 *  - order: R rounds of A, B, A; the median of A's batches that follow A's and of those that
 *    follow B's, and their ratio (what a batch pays for the algorithm run before it).
 * Usage (library preloaded; host buffers need EFACOLL_HOST_BUFFERS=1): algo_steadiness
 * [-c allreduce|allgather|reduce_scatter] [-s BYTES] [-a SPEC] [-o SPEC] [-w WINDOWS]
 * [-r ROUNDS]; SPEC as efacoll_set_algo takes it (default allgather:ring against allgather:rd,
 * 4096 B, 10 windows of 15 rounds). */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int (*set_algo_fn)(const char*);

enum { kMaxRounds = 63 };

static int coll;
static size_t count;
static float *send_buf, *recv_buf;

static void call(int nranks) {
  if (coll == 0)
    MPI_Allreduce(send_buf, recv_buf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  else if (coll == 1)
    MPI_Allgather(send_buf, count / nranks, MPI_FLOAT, recv_buf, count / nranks, MPI_FLOAT,
                  MPI_COMM_WORLD);
  else
    MPI_Reduce_scatter_block(send_buf, recv_buf, count / nranks, MPI_FLOAT, MPI_SUM,
                             MPI_COMM_WORLD);
}

/* tuner_bench's batch: its mean time per call (us), slowest rank. */
static double batch(int nranks) {
  const int iters = count * 4 >= (4u << 20) ? 2 : count * 4 >= (64u << 10) ? 5 : 40;
  PMPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) call(nranks);
  double mine = (MPI_Wtime() - t0) / iters * 1e6, worst = 0;
  PMPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double median(double* t, int n) {
  qsort(t, n, sizeof(double), cmp);
  return t[n / 2];
}

int main(int argc, char** argv) {
  const char *a = "allgather:ring", *b = "allgather:rd";
  size_t bytes = 4096;
  int windows = 10, rounds = 15, c;
  MPI_Init(&argc, &argv);
  while ((c = getopt(argc, argv, "c:s:a:o:w:r:")) != -1) {
    if (c == 'c')
      coll = !strcmp(optarg, "allgather") ? 1 : !strcmp(optarg, "reduce_scatter") ? 2 : 0;
    else if (c == 's')
      bytes = strtoull(optarg, 0, 10);
    else if (c == 'a')
      a = optarg;
    else if (c == 'o')
      b = optarg;
    else if (c == 'w')
      windows = atoi(optarg);
    else if (c == 'r')
      rounds = atoi(optarg);
  }
  if (rounds < 1) rounds = 1;
  if (rounds > kMaxRounds) rounds = kMaxRounds;
  int rank, nranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  set_algo_fn set_algo = (set_algo_fn)dlsym(RTLD_DEFAULT, "efacoll_set_algo");
  if (!set_algo) {
    if (rank == 0) fprintf(stderr, "algo_steadiness: efacoll is not loaded (LD_PRELOAD)\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  count = bytes / sizeof(float) / nranks * nranks;
  send_buf = calloc(count ? count : 1, sizeof(float));
  recv_buf = calloc(count ? count : 1, sizeof(float));
  /* Warm-up: first schedules, registrations, new peers. */
  for (int k = 0; k < 2; ++k) {
    set_algo(k ? b : a);
    for (int w = 0; w < 3; ++w) call(nranks);
  }
  double ta[kMaxRounds], tb[kMaxRounds], after_b[kMaxRounds];
  if (rank == 0) {
    printf("# algo_steadiness: %zu B, %d ranks; A = %s, B = %s; %d rounds a window\n",
           count * sizeof(float), nranks, a, b, rounds);
    printf("| window | A us | B us | B / A |\n|---|---|---|---|\n");
  }
  for (int w = 0; w < windows; ++w) {
    for (int k = 0; k < rounds; ++k) {
      set_algo(a);
      ta[k] = batch(nranks);
      set_algo(b);
      tb[k] = batch(nranks);
    }
    const double ma = median(ta, rounds), mb = median(tb, rounds);
    if (rank == 0) printf("| %d | %.1f | %.1f | %.2f |\n", w, ma, mb, mb / ma);
  }
  set_algo(a);
  batch(nranks);
  for (int k = 0; k < rounds; ++k) {
    set_algo(a);
    ta[k] = batch(nranks); /* after the previous round's second A */
    set_algo(b);
    tb[k] = batch(nranks);
    set_algo(a);
    after_b[k] = batch(nranks);
  }
  const double after_a = median(ta, rounds), after = median(after_b, rounds);
  if (rank == 0) {
    printf("\nA after A %.1f us, A after B %.1f us: x%.2f\n", after_a, after, after / after_a);
  }
  free(send_buf);
  free(recv_buf);
  MPI_Finalize();
  return 0;
}

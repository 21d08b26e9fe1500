/* algo_steadiness: how steady this machine keeps the order of two forced algorithms: the noise
 * under tuner_bench's judgement (the tuner's pick within 10 % of the fastest, in each run).
 * In one run, for one collective and size, with tuner_bench's batches (bench_batch.h):
 *  - windows: W windows one after the other, each R rounds of one batch of A and one of B,
 *    A first in even rounds and B first in odd ones (so that what a batch pays for the one
 *    before it falls on both alike); per window the medians and B's over A's;
 *  - order: R rounds of A, B, A; the median of A's batches that follow A's and of those that
 *    follow B's, and their ratio (what a batch pays for the algorithm run before it).
 * Usage (library preloaded; host buffers need EFACOLL_HOST_BUFFERS=1): algo_steadiness
 * [-s BYTES] [-a SPEC] [-o SPEC] [-w WINDOWS] [-r ROUNDS, at most 63]; each SPEC as
 * efacoll_set_algo takes it, both of one collective (default allgather:ring against
 * allgather:rd, 4096 B, 10 windows of 15 rounds). */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_batch.h"

typedef int (*set_algo_fn)(const char*);

enum { kMaxRounds = 63 };

/* The collective a spec forces ("allgather:rd"): 0 allreduce, 1 allgather, 2 reduce_scatter,
 * -1 none. */
static int spec_coll(const char* spec) {
  const char* names[3] = {"allreduce:", "allgather:", "reduce_scatter:"};
  for (int c = 0; c < 3; ++c) {
    if (!strncmp(spec, names[c], strlen(names[c]))) return c;
  }
  return -1;
}

static set_algo_fn set_algo;
static int coll, nranks;
static size_t count;
static float *send_buf, *recv_buf;

static double batch_of(const char* spec) {
  set_algo(spec);
  return bench_batch(coll, send_buf, recv_buf, count, nranks);
}

int main(int argc, char** argv) {
  const char *a = "allgather:ring", *b = "allgather:rd";
  size_t bytes = 4096;
  int windows = 10, rounds = 15, rank, c;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  while ((c = getopt(argc, argv, "s:a:o:w:r:")) != -1) {
    if (c == 's')
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
  coll = spec_coll(a);
  set_algo = (set_algo_fn)dlsym(RTLD_DEFAULT, "efacoll_set_algo");
  const char* wrong = !set_algo                    ? "efacoll is not loaded (LD_PRELOAD)"
                      : coll < 0                   ? "-a names no collective (allgather:rd)"
                      : spec_coll(b) != coll       ? "-a and -o name different collectives"
                      : set_algo(a) || set_algo(b) ? "efacoll_set_algo refused -a or -o"
                                                   : 0;
  if (wrong) {
    if (rank == 0) fprintf(stderr, "algo_steadiness: %s\n", wrong);
    MPI_Finalize();
    return 2;
  }
  count = bytes / sizeof(float);
  if (coll != 0) count -= count % nranks;
  send_buf = calloc(count ? count : 1, sizeof(float));
  recv_buf = calloc(count ? count : 1, sizeof(float));
  if (!send_buf || !recv_buf) MPI_Abort(MPI_COMM_WORLD, 2);
  /* Warm-up: first schedules, registrations, new peers. */
  for (int k = 0; k < 6; ++k) batch_of(k % 2 ? b : a);
  double ta[kMaxRounds], tb[kMaxRounds];
  if (rank == 0) {
    printf("# algo_steadiness: %zu B, %d ranks; A = %s, B = %s; %d rounds a window\n",
           count * sizeof(float), nranks, a, b, rounds);
    printf("| window | A us | B us | B / A |\n|---|---|---|---|\n");
  }
  for (int w = 0; w < windows; ++w) {
    for (int k = 0; k < rounds; ++k) {
      if (k % 2 == 0) {
        ta[k] = batch_of(a);
        tb[k] = batch_of(b);
      } else {
        tb[k] = batch_of(b);
        ta[k] = batch_of(a);
      }
    }
    const double ma = bench_median(ta, rounds), mb = bench_median(tb, rounds);
    if (rank == 0) printf("| %d | %.1f | %.1f | %.2f |\n", w, ma, mb, mb / ma);
  }
  batch_of(a);
  for (int k = 0; k < rounds; ++k) {
    ta[k] = batch_of(a); /* after the previous round's second A */
    batch_of(b);
    tb[k] = batch_of(a); /* right after B */
  }
  const double after_a = bench_median(ta, rounds), after_b = bench_median(tb, rounds);
  if (rank == 0) {
    printf("\nA after A %.1f us, A after B %.1f us: x%.2f\n", after_a, after_b, after_b / after_a);
  }
  free(send_buf);
  free(recv_buf);
  MPI_Finalize();
  return 0;
}

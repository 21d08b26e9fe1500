/* efacoll_bench: an nccl-tests style benchmark of one collective, efacoll against the host MPI.
 * Run it under mpirun with libefacoll.so preloaded: MPI_* calls go to efacoll, PMPI_* calls go
 * straight to the host MPI, so one run measures both. */
#define _GNU_SOURCE
#include <ctype.h>
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum coll { ALLREDUCE, ALLGATHER, REDUCE_SCATTER };
enum impl { EFACOLL, HOST };

static const char* const kCollNames[] = {"allreduce", "allgather", "reduce_scatter"};

struct type_info {
  const char* name;
  MPI_Datatype mpi;
  size_t size;
};

struct options {
  size_t min_bytes, max_bytes, factor;
  enum coll coll;
  int iters; /* 0: adaptive */
  int warmup, repeats, check;
  struct type_info type;
};

struct bench {
  struct options opt;
  int rank, nranks;
  void *sendbuf, *recvbuf;
};

/* Iterations per size and implementation: about this much timed work, spread over the repeats. */
static const double kTargetSeconds = 0.2;
static const int kMinIters = 5, kMaxIters = 1000;
static const size_t kLargeBytes = (size_t)16 << 20; /* from here on fewer than kMinIters is ok */

static void die(const char* what, int rc) {
  fprintf(stderr, "efacoll_bench: %s failed (MPI error %d)\n", what, rc);
  MPI_Abort(MPI_COMM_WORLD, 2);
}

/* "256M" -> 268435456; 0 on malformed input. */
static size_t parse_bytes(const char* s) {
  static const char kSuffixes[] = "KMG";
  char* end = NULL;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s) return 0;
  const char* suffix = *end ? strchr(kSuffixes, toupper((unsigned char)*end)) : NULL;
  if (suffix) {
    v <<= 10 * (suffix - kSuffixes + 1);
    ++end;
  }
  return *end == '\0' ? (size_t)v : 0;
}

static int parse_type(const char* s, struct type_info* t) {
  static const struct type_info kTypes[] = {
      {"float", MPI_FLOAT, sizeof(float)},
      {"int32", MPI_INT32_T, sizeof(int)},
      {"double", MPI_DOUBLE, sizeof(double)},
  };
  for (size_t i = 0; i < sizeof(kTypes) / sizeof(kTypes[0]); ++i) {
    if (strcmp(s, kTypes[i].name) == 0) {
      *t = kTypes[i];
      return 1;
    }
  }
  return 0;
}

static void usage(void) {
  fprintf(stderr,
          "usage: efacoll_bench [-b MINBYTES] [-e MAXBYTES] [-f FACTOR] [-c COLLECTIVE]\n"
          "                     [-n ITERS] [-w WARMUP] [-r REPEATS] [-t TYPE] [-C|-N]\n"
          "  -b/-e   size range in bytes, K/M/G suffixes (default 8 .. 256M)\n"
          "  -f      size multiplication factor (default 2)\n"
          "  -c      allreduce | allgather | reduce_scatter (default allreduce)\n"
          "  -n      iterations per repeat (default: adaptive, ~%.1f s per size)\n"
          "  -w      warm-up calls (default 3)\n"
          "  -r      repeats; the time shown is their median (default 5)\n"
          "  -t      float | int32 | double (default float)\n"
          "  -C/-N   check results (default) / do not\n",
          kTargetSeconds);
}

/* 1 on success; 0 after a usage error. */
static int parse_options(int argc, char** argv, struct options* o) {
  *o = (struct options){.min_bytes = 8,
                        .max_bytes = (size_t)256 << 20,
                        .factor = 2,
                        .coll = ALLREDUCE,
                        .warmup = 3,
                        .repeats = 5,
                        .check = 1};
  parse_type("float", &o->type);
  int c, ok = 1;
  while (ok && (c = getopt(argc, argv, "b:e:f:c:n:w:r:t:CNh")) != -1) {
    switch (c) {
      case 'b':
        ok = (o->min_bytes = parse_bytes(optarg)) > 0;
        break;
      case 'e':
        ok = (o->max_bytes = parse_bytes(optarg)) > 0;
        break;
      case 'f':
        ok = (o->factor = strtoul(optarg, NULL, 10)) >= 2;
        break;
      case 'c':
        ok = 0;
        for (int i = 0; i < 3; ++i) {
          if (strcmp(optarg, kCollNames[i]) == 0) o->coll = (enum coll)i, ok = 1;
        }
        break;
      case 'n':
        ok = (o->iters = atoi(optarg)) > 0;
        break;
      case 'w':
        ok = (o->warmup = atoi(optarg)) >= 0;
        break;
      case 'r':
        ok = (o->repeats = atoi(optarg)) > 0;
        break;
      case 't':
        ok = parse_type(optarg, &o->type);
        break;
      case 'C':
        o->check = 1;
        break;
      case 'N':
        o->check = 0;
        break;
      default:
        ok = 0;
        break;
    }
  }
  return ok && optind == argc && o->min_bytes <= o->max_bytes;
}

/* Elements each rank contributes (allgather) or receives (reduce_scatter); the whole count for
 * allreduce. Sizes are rounded down to what the collective can move; 0 means skip the size. */
static size_t count_for(const struct bench* b, size_t bytes) {
  size_t per = b->opt.coll == ALLREDUCE ? 1 : (size_t)b->nranks;
  return bytes / (b->opt.type.size * per);
}

static size_t total_bytes(const struct bench* b, size_t count) {
  size_t per = b->opt.coll == ALLREDUCE ? 1 : (size_t)b->nranks;
  return count * per * b->opt.type.size;
}

static int run_collective(const struct bench* b, enum impl impl, size_t count) {
  MPI_Datatype t = b->opt.type.mpi;
  int n = (int)count, h = impl == HOST;
  switch (b->opt.coll) {
    case ALLREDUCE:
      return h ? PMPI_Allreduce(b->sendbuf, b->recvbuf, n, t, MPI_SUM, MPI_COMM_WORLD)
               : MPI_Allreduce(b->sendbuf, b->recvbuf, n, t, MPI_SUM, MPI_COMM_WORLD);
    case ALLGATHER:
      return h ? PMPI_Allgather(b->sendbuf, n, t, b->recvbuf, n, t, MPI_COMM_WORLD)
               : MPI_Allgather(b->sendbuf, n, t, b->recvbuf, n, t, MPI_COMM_WORLD);
    case REDUCE_SCATTER:
      return h ? PMPI_Reduce_scatter_block(b->sendbuf, b->recvbuf, n, t, MPI_SUM, MPI_COMM_WORLD)
               : MPI_Reduce_scatter_block(b->sendbuf, b->recvbuf, n, t, MPI_SUM, MPI_COMM_WORLD);
  }
  return MPI_ERR_OTHER;
}

static void run_checked(const struct bench* b, enum impl impl, size_t count) {
  int rc = run_collective(b, impl, count);
  if (rc != MPI_SUCCESS) die(kCollNames[b->opt.coll], rc);
}

/* Reductions go through PMPI so that the timing and checking never measure efacoll itself. */
static double max_over_ranks(double v) {
  double out = 0;
  PMPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return out;
}

/* Wall time of one call, averaged over `iters` calls, slowest rank. */
static double time_iterations(const struct bench* b, enum impl impl, size_t count, int iters) {
  PMPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) run_checked(b, impl, count);
  return max_over_ranks((MPI_Wtime() - t0) / iters);
}

/* Runs the warm-up and sizes the timed loop from it; every rank gets the same answer. */
static int warm_up_and_choose_iters(const struct bench* b, enum impl impl, size_t count) {
  if (b->opt.iters > 0) {
    if (b->opt.warmup > 0) time_iterations(b, impl, count, b->opt.warmup);
    return b->opt.iters;
  }
  double per_call = time_iterations(b, impl, count, b->opt.warmup > 0 ? b->opt.warmup : 1);
  double want = kTargetSeconds / b->opt.repeats / (per_call > 1e-9 ? per_call : 1e-9);
  int lo = total_bytes(b, count) >= kLargeBytes ? 1 : kMinIters;
  return want < lo ? lo : want > kMaxIters ? kMaxIters : (int)want;
}

static int compare_doubles(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* Median over repeats of the mean time per call, in seconds. */
static double measure(const struct bench* b, enum impl impl, size_t count) {
  int iters = warm_up_and_choose_iters(b, impl, count), r = b->opt.repeats;
  double* t = malloc(sizeof(double) * (size_t)r);
  for (int i = 0; i < r; ++i) t[i] = time_iterations(b, impl, count, iters);
  qsort(t, (size_t)r, sizeof(double), compare_doubles);
  double median = r % 2 ? t[r / 2] : (t[r / 2 - 1] + t[r / 2]) / 2;
  free(t);
  return median;
}

static void store(const struct bench* b, void* buf, size_t i, int v) {
  if (b->opt.type.size == sizeof(double))
    ((double*)buf)[i] = v;
  else if (b->opt.type.mpi == MPI_FLOAT)
    ((float*)buf)[i] = (float)v;
  else
    ((int*)buf)[i] = v;
}

static double load(const struct bench* b, const void* buf, size_t i) {
  if (b->opt.type.size == sizeof(double)) return ((const double*)buf)[i];
  if (b->opt.type.mpi == MPI_FLOAT) return ((const float*)buf)[i];
  return ((const int*)buf)[i];
}

/* Rank r's input element k is (r + k) % 7: small integers, so every sum is exact in float. */
static int input_value(int rank, size_t k) { return (int)(((size_t)rank + k) % 7); }

/* Sum over ranks of input element k; depends only on k % 7. */
static double reduced_value(const struct bench* b, size_t k) {
  double sum = 0;
  for (int r = 0; r < b->nranks; ++r) sum += input_value(r, k);
  return sum;
}

/* Runs the collective once on poisoned output; returns the number of wrong elements, all ranks. */
static long long count_wrong(const struct bench* b, enum impl impl, size_t count,
                             const double* expected7) {
  size_t n = (size_t)b->nranks, out = b->opt.coll == ALLGATHER ? count * n : count;
  memset(b->recvbuf, 0xff, out * b->opt.type.size); /* NaN or -1: never a right answer */
  run_checked(b, impl, count);
  long long wrong = 0, total = 0;
  for (size_t i = 0; i < out; ++i) {
    double want;
    switch (b->opt.coll) {
      case ALLREDUCE:
        want = expected7[i % 7];
        break;
      case ALLGATHER:
        want = input_value((int)(i / count), i % count);
        break;
      default:
        want = expected7[((size_t)b->rank * count + i) % 7];
        break;
    }
    wrong += load(b, b->recvbuf, i) != want;
  }
  PMPI_Allreduce(&wrong, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

/* Allocates for the largest size and touches every page, so no first-touch cost is timed. */
static int allocate_buffers(struct bench* b, size_t max_count) {
  size_t n = (size_t)b->nranks, es = b->opt.type.size;
  size_t send = b->opt.coll == REDUCE_SCATTER ? max_count * n : max_count;
  size_t recv = b->opt.coll == ALLGATHER ? max_count * n : max_count;
  b->sendbuf = malloc(send * es);
  b->recvbuf = malloc(recv * es);
  if (!b->sendbuf || !b->recvbuf) return 0;
  for (size_t k = 0; k < send; ++k) store(b, b->sendbuf, k, input_value(b->rank, k));
  memset(b->recvbuf, 0, recv * es);
  return 1;
}

static double busbw_factor(const struct bench* b) {
  double n = b->nranks;
  return b->opt.coll == ALLREDUCE ? 2 * (n - 1) / n : (n - 1) / n;
}

static void print_header(const struct bench* b) {
  const struct options* o = &b->opt;
  const char* (*provider_fn)(void) = (const char* (*)(void))dlsym(RTLD_DEFAULT, "efacoll_provider");
  const char* provider = provider_fn ? provider_fn() : NULL;
  printf("# efacoll_bench: %s, %d ranks, type %s, op sum\n", kCollNames[o->coll], b->nranks,
         o->type.name);
  if (!provider_fn) {
    printf("# efacoll not loaded: both columns measure the host MPI\n");
  } else if (!provider) {
    printf("# efacoll inactive (no provider): both columns measure the host MPI\n");
  } else {
    printf("# efacoll provider: %s\n", provider);
  }
  printf("# sizes %zu .. %zu B, factor %zu, iters ", o->min_bytes, o->max_bytes, o->factor);
  if (o->iters > 0)
    printf("%d", o->iters);
  else
    printf("adaptive (~%.1f s per size)", kTargetSeconds);
  printf(", warmup %d, time = median of %d repeats, check %s\n", o->warmup, o->repeats,
         o->check ? "on" : "off");
  if (o->coll != ALLREDUCE) printf("# size is the total buffer: %d x per-rank bytes\n", b->nranks);
  printf("#\n");
  printf("# %31s  %s  %s\n", "", "------------ efacoll -------------",
         "------------ host MPI ------------");
  printf("# %12s %11s %6s  %10s %7s %7s %7s  %10s %7s %7s %7s  %7s\n", "size", "count", "type",
         "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong", "ratio");
  printf("# %12s %11s %6s  %10s %7s %7s %7s  %10s %7s %7s %7s  %7s\n", "(B)", "(elements)", "",
         "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", "host/efa");
}

static void print_result(const struct bench* b, size_t bytes, double seconds, long long wrong) {
  double algbw = bytes / seconds / 1e9;
  printf("  %10.2f %7.2f %7.2f ", seconds * 1e6, algbw, algbw * busbw_factor(b));
  if (wrong < 0)
    printf("%7s", "N/A");
  else
    printf("%7lld", wrong);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct bench b;
  memset(&b, 0, sizeof(b));
  MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &b.nranks);
  if (!parse_options(argc, argv, &b.opt)) {
    if (b.rank == 0) usage();
    MPI_Finalize();
    return 2;
  }
  size_t max_count = count_for(&b, b.opt.max_bytes);
  if (max_count == 0 || max_count > INT_MAX) {
    if (b.rank == 0) fprintf(stderr, "efacoll_bench: -e gives %zu elements per call\n", max_count);
    MPI_Finalize();
    return 2;
  }
  if (!allocate_buffers(&b, max_count)) {
    fprintf(stderr, "efacoll_bench: rank %d: out of memory\n", b.rank);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (b.rank == 0) print_header(&b);

  double expected7[7];
  for (int k = 0; k < 7; ++k) expected7[k] = reduced_value(&b, (size_t)k);
  long long wrong_sum[2] = {0, 0};
  double busbw_sum[2] = {0, 0}, log_ratio_sum = 0;
  int rows = 0;
  size_t prev_bytes = 0;
  for (size_t size = b.opt.min_bytes; size <= b.opt.max_bytes; size *= b.opt.factor) {
    size_t count = count_for(&b, size), bytes = total_bytes(&b, count);
    if (count > 0 && bytes != prev_bytes) {
      double t[2];
      long long wrong[2] = {-1, -1};
      for (int impl = EFACOLL; impl <= HOST; ++impl) {
        t[impl] = measure(&b, (enum impl)impl, count);
        if (b.opt.check) wrong[impl] = count_wrong(&b, (enum impl)impl, count, expected7);
        if (wrong[impl] > 0) wrong_sum[impl] += wrong[impl];
        busbw_sum[impl] += bytes / t[impl] / 1e9 * busbw_factor(&b);
      }
      log_ratio_sum += log(t[HOST] / t[EFACOLL]);
      ++rows;
      prev_bytes = bytes;
      if (b.rank == 0) {
        printf("  %12zu %11zu %6s", bytes, bytes / b.opt.type.size, b.opt.type.name);
        for (int impl = EFACOLL; impl <= HOST; ++impl)
          print_result(&b, bytes, t[impl], wrong[impl]);
        printf("  %7.2f\n", t[HOST] / t[EFACOLL]);
        fflush(stdout);
      }
    }
    if (size > b.opt.max_bytes / b.opt.factor) break;
  }

  if (b.rank == 0 && rows > 0) {
    printf("# wrong values: efacoll %lld, host MPI %lld%s\n", wrong_sum[EFACOLL], wrong_sum[HOST],
           b.opt.check ? "" : " (not checked)");
    printf("# avg busbw (GB/s): efacoll %.3f, host MPI %.3f; geomean ratio host/efa %.3f\n",
           busbw_sum[EFACOLL] / rows, busbw_sum[HOST] / rows, exp(log_ratio_sum / rows));
  }
  free(b.sendbuf);
  free(b.recvbuf);
  int failed = wrong_sum[EFACOLL] > 0 || wrong_sum[HOST] > 0;
  MPI_Finalize();
  return failed;
}

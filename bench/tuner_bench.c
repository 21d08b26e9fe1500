/* tuner_bench: in one run, for each size, the tuner's choice against every forced algorithm
 * (efacoll_set_algo between measurements). Host buffers go through efacoll's fabric path;
 * GPU buffers (-m device, one GPU per local rank, CUDA runtime loaded at run time) also
 * compare the in-node protocols (ll, ipc) with the fabric algorithms.
 * Prints time per algorithm (median of repeats, slowest rank) with the model's prediction, the
 * tuner's pick and its time, its ratio to the fastest forced one, and the model's error.
 * Usage (library preloaded; host buffers need EFACOLL_HOST_BUFFERS=1): tuner_bench
 * [-c allreduce|allgather|reduce_scatter] [-m host|device] [-b MIN] [-e MAX] [-f FACTOR]
 * [-r REPEATS] [-t SECONDS]
 * -r is the least number of repeats; a size whose repeats took less than -t seconds in all
 * (default 0: none) gets more, up to 63, so that the cheap small sizes, where ranks sharing
 * cores swing one algorithm's batch by 1.5x, are judged on a steadier median. The tuner's
 * online trials (EFACOLL_TUNE_TRIALS) run to their end before its choice is measured. */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_batch.h"

typedef int (*set_algo_fn)(const char*);
typedef const char* (*last_algo_fn)(void);
typedef double (*last_pred_fn)(void);
typedef int (*last_chunking_fn)(size_t*, int*);
typedef int (*on_trial_fn)(void);

static int coll = 0; /* 0 allreduce, 1 allgather, 2 reduce_scatter */

typedef int (*cuda_set_device_fn)(int);
typedef int (*cuda_device_count_fn)(int*);
typedef int (*cuda_malloc_fn)(void**, size_t);
typedef int (*cuda_memcpy_fn)(void*, const void*, size_t, int);

/* Device buffers through the CUDA runtime found at run time (0 where there is none), on GPU
 * local rank % GPUs: ranks share GPUs where there are fewer GPUs than ranks. */
static void* device_buffer(size_t bytes, const void* fill) {
  static void* cudart;
  if (!cudart) cudart = dlopen("libcudart.so", RTLD_NOW | RTLD_GLOBAL);
  if (!cudart) cudart = dlopen("libcudart.so.13", RTLD_NOW | RTLD_GLOBAL);
  if (!cudart) cudart = dlopen("libcudart.so.12", RTLD_NOW | RTLD_GLOBAL);
  if (!cudart) return 0;
  cuda_set_device_fn set_device = (cuda_set_device_fn)dlsym(cudart, "cudaSetDevice");
  cuda_malloc_fn cmalloc = (cuda_malloc_fn)dlsym(cudart, "cudaMalloc");
  cuda_memcpy_fn cmemcpy = (cuda_memcpy_fn)dlsym(cudart, "cudaMemcpy");
  cuda_device_count_fn count = (cuda_device_count_fn)dlsym(cudart, "cudaGetDeviceCount");
  const char* local = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  int gpus = 0;
  void* p = 0;
  if (!set_device || !cmalloc || !cmemcpy || !count || count(&gpus) != 0 || gpus < 1 ||
      set_device((local ? atoi(local) : 0) % gpus) != 0 || cmalloc(&p, bytes) != 0)
    return 0;
  if (fill) cmemcpy(p, fill, bytes, 1 /* cudaMemcpyHostToDevice */);
  return p;
}

enum { kMaxRepeats = 63 };

int main(int argc, char** argv) {
  size_t min_bytes = 8, max_bytes = (size_t)1 << 28, factor = 4;
  int repeats = 5, c, device = 0;
  double budget_s = 0;
  MPI_Init(&argc, &argv);
  while ((c = getopt(argc, argv, "c:m:b:e:f:r:t:")) != -1) {
    if (c == 'm')
      device = !strcmp(optarg, "device");
    else if (c == 'c')
      coll = !strcmp(optarg, "allgather") ? 1 : !strcmp(optarg, "reduce_scatter") ? 2 : 0;
    else if (c == 'b')
      min_bytes = strtoull(optarg, 0, 10);
    else if (c == 'e')
      max_bytes = strtoull(optarg, 0, 10);
    else if (c == 'f')
      factor = strtoull(optarg, 0, 10);
    else if (c == 'r')
      repeats = atoi(optarg);
    else if (c == 't')
      budget_s = atof(optarg);
  }
  if (repeats < 1) repeats = 1;
  if (repeats > kMaxRepeats) repeats = kMaxRepeats;
  int rank, nranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  set_algo_fn set_algo = (set_algo_fn)dlsym(RTLD_DEFAULT, "efacoll_set_algo");
  last_algo_fn last_algo = (last_algo_fn)dlsym(RTLD_DEFAULT, "efacoll_last_algorithm");
  last_pred_fn last_pred = (last_pred_fn)dlsym(RTLD_DEFAULT, "efacoll_last_predicted_us");
  last_chunking_fn last_chunking = (last_chunking_fn)dlsym(RTLD_DEFAULT, "efacoll_last_chunking");
  on_trial_fn on_trial = (on_trial_fn)dlsym(RTLD_DEFAULT, "efacoll_last_on_trial");
  if (!set_algo || !last_algo || !last_pred || !last_chunking) {
    if (rank == 0) fprintf(stderr, "tuner_bench: libefacoll.so is not preloaded\n");
    MPI_Finalize();
    return 2;
  }
  /* Forced algorithms per collective; GPU buffers add the in-node protocols. */
  const char* specs[3][5] = {{"ring", "tree", "rd", "ll", "ipc"},
                             {"ring", "", "rd", "ll", "ipc"},
                             {"ring", "", "rh", "ll", "ipc"}};
  const char* names[5] = {"ring", "tree", "rd/rh", "ll", "ipc"};
  const int nspecs = device ? 5 : 3;
  float* s = malloc(max_bytes);
  float* r = malloc(max_bytes);
  for (size_t i = 0; i < max_bytes / sizeof(float); ++i) s[i] = (float)(i % 7);
  if (device) {
    float* ds = device_buffer(max_bytes, s);
    float* dr = device_buffer(max_bytes, 0);
    /* All ranks stop where one has no buffers: the others would wait in the first call. */
    int mine = ds && dr, all = 0;
    PMPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all) {
      if (!mine) fprintf(stderr, "tuner_bench: rank %d has no CUDA device buffers\n", rank);
      MPI_Finalize();
      return 2;
    }
    free(s);
    free(r);
    s = ds;
    r = dr;
  }
  if (rank == 0) {
    printf(
        "# tuner_bench: %s, %d ranks, float sum, %s buffers; us = median of %d repeats (more, "
        "up to %d, while a size's repeats take under %.1f s), slowest rank\n",
        coll == 0   ? "allreduce"
        : coll == 1 ? "allgather"
                    : "reduce_scatter",
        nranks, device ? "GPU" : "host", repeats, kMaxRepeats, budget_s);
    printf("| size (B) |");
    for (int a = 0; a < nspecs; ++a) printf(" %s us (predicted) |", names[a]);
    printf(
        " tuner's pick | chunk x channels | pick forced / best | auto us | auto / best | "
        "predicted us | model error |\n|---|");
    for (int a = 0; a < nspecs; ++a) printf("---|");
    printf("---|---|---|---|---|---|---|\n");
  }
  /* Every factor step from min_bytes, and max_bytes itself. */
  for (size_t bytes = min_bytes; bytes <= max_bytes;
       bytes = bytes < max_bytes && bytes * factor > max_bytes ? max_bytes : bytes * factor) {
    size_t count = bytes / sizeof(float);
    if (coll != 0) count -= count % nranks;
    if (count == 0) continue;
    /* Forced algorithms and then the tuner ("auto"), interleaved batch by batch so that a
     * slow stretch of the machine falls on all of them alike. */
    char spec[6][64];
    const char* got[6];
    double t[6] = {0}, pred[6] = {0}, samples[6][kMaxRepeats], best = 1e300;
    int na = 0, idx[6];
    for (int a = 0; a < nspecs; ++a) {
      if (!specs[coll][a][0]) continue;
      snprintf(spec[na], sizeof(spec[na]), "%s:%s",
               coll == 0   ? "allreduce"
               : coll == 1 ? "allgather"
                           : "reduce_scatter",
               specs[coll][a]);
      idx[na++] = a;
    }
    snprintf(spec[na], sizeof(spec[na]), "auto");
    idx[na] = -1;
    for (int a = 0; a <= na; ++a) { /* warm-up: first schedules, registrations, new peers */
      set_algo(spec[a]);
      for (int w = 0; w < 3; ++w) bench_call(coll, s, r, count, nranks);
    }
    /* The tuner's online trials (EFACOLL_TUNE_TRIALS) end before its choice is measured. Every
     * rank reads the same, so all stop at the same call. */
    for (int w = 0; on_trial && on_trial() && w < 1000; ++w) bench_call(coll, s, r, count, nranks);
    /* Batch times are the slowest rank's, the same on every rank: so is the decision to go on. */
    double spent_s = 0;
    int done = 0;
    while (done < kMaxRepeats && (done < repeats || spent_s < budget_s)) {
      for (int a = 0; a <= na; ++a) {
        set_algo(spec[a]);
        samples[a][done] = bench_batch(coll, s, r, count, nranks);
        spent_s += samples[a][done] * bench_batch_iters(count) * 1e-6;
        pred[a] = last_pred();
        got[a] = last_algo();
      }
      ++done;
    }
    double forced_t[5] = {0}, forced_pred[5] = {0};
    int pick_forced = -1;
    for (int a = 0; a < na; ++a) {
      const double m = bench_median(samples[a], done);
      /* Forced ll where the call does not fit its slots runs as ipc: not a measurement of ll. */
      if (!strcmp(specs[coll][idx[a]], "ll") && strncmp(got[a], "low-latency", 11)) continue;
      forced_t[idx[a]] = m;
      forced_pred[idx[a]] = pred[a];
      if (m < best) best = m;
      if (!strcmp(got[a], got[na])) pick_forced = idx[a];
    }
    const double tuned = bench_median(samples[na], done);
    const char* pick = got[na];
    const double predicted = pred[na];
    const double choice = pick_forced >= 0 ? forced_t[pick_forced] / best : tuned / best;
    size_t chunk = 0;
    int channels = 0;
    set_algo("auto");
    bench_call(coll, s, r, count, nranks);
    last_chunking(&chunk, &channels);
    for (int a = 0; a < 5; ++a) {
      t[a] = forced_t[a];
      pred[a] = forced_pred[a];
    }
    if (rank == 0) {
      printf("| %zu |", count * sizeof(float));
      for (int a = 0; a < nspecs; ++a) {
        if (t[a] > 0)
          printf(" %.1f (%.1f) |", t[a], pred[a]);
        else
          printf(" - |");
      }
      printf(" %s | %zu KiB x %d | %.2f | %.1f | %.2f | %.1f | %+.0f%% |\n", pick, chunk >> 10,
             channels, choice, tuned, tuned / best, predicted, (predicted - tuned) / tuned * 100);
      fflush(stdout);
    }
  }
  if (!device) {
    free(s);
    free(r);
  }
  MPI_Finalize();
  return 0;
}

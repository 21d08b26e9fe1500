/* threads_test: MPI_THREAD_MULTIPLE, --threads T threads per rank, each on its own duplicate
 * of MPI_COMM_WORLD, each making --calls random collectives (collective, size up to
 * --max-bytes, type, op, in place) compared with PMPI on the same inputs on its communicator.
 * Every --churn calls a thread also duplicates its communicator, makes a few calls on the
 * copy and frees it, so that communicators come and go while other threads' calls run. The
 * ranks' threads run at their own paces: the ranks take the threads' calls in different orders.
 * With --memory gpu the calls' buffers are on the GPU, as in soak_test's, at the threads' own
 * paces too (--gpu-order free): efacoll's GPU calls lend its lock while they wait for peers.
 * Where the low-latency protocol runs (small calls inside a node, or small in-node phases of
 * hierarchical calls, where ranks have GPUs of their own) its kernels wait for the peers on the
 * GPU, and this test's cuMemFree of every call's buffers, like efacoll's freeing of a
 * communicator's GPU memory, waits for every kernel of the device (CUDA's rule, which NCCL
 * documents too): threads at their own paces can then wait for each other through those frees
 * (docs/architecture.md, "Threads, fork and resources"; decision 0024), so there free order runs with EFACOLL_IPC_LL_MAX=0.
 * --gpu-order turns has the threads take turns in one order on every rank.
 *
 * Exit 77 (skipped) where the MPI does not provide MPI_THREAD_MULTIPLE; 1 on any mismatch,
 * error, or when efacoll does not report the thread level or did not run the calls. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_memory.h"
#include "mpi_test_util.h"
#include "random_call.h"
#include "resources.h"

enum { kMaxThreads = 16 };

typedef struct {
  int index, rank;
  MPI_Comm comm;
  long calls, churn;
  size_t max_bytes;
  uint64_t seed;
  int gpu;   /* GPU buffers */
  int turns; /* the threads take turns in one order on every rank */
  int nthreads;
  rk_tally tally;
  long churned;
} worker;

static void run_on(worker* w, MPI_Comm comm, long i, const char* who) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  rk_call c;
  const uint64_t h = tu_hash(w->seed, (uint64_t)w->index, (uint64_t)i);
  rk_draw(h, size, w->max_bytes, &c);
  if (w->gpu) rk_draw_gpu_memory(h, &c);
  rk_run_counted(&c, comm, who, &w->tally, 10);
}

/* The turns of --gpu-order turns: thread t's iteration i is turn i x threads + t on every rank. */
static struct {
  pthread_mutex_t lock;
  pthread_cond_t next;
  long turn;
} turn_state = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};

static void turn_wait(long mine) {
  pthread_mutex_lock(&turn_state.lock);
  while (turn_state.turn != mine) pthread_cond_wait(&turn_state.next, &turn_state.lock);
  pthread_mutex_unlock(&turn_state.lock);
}

static void turn_pass(void) {
  pthread_mutex_lock(&turn_state.lock);
  turn_state.turn++;
  pthread_cond_broadcast(&turn_state.next);
  pthread_mutex_unlock(&turn_state.lock);
}

static void* thread_main(void* arg) {
  worker* w = arg;
  char who[64];
  snprintf(who, sizeof(who), "rank %d thread %d", w->rank, w->index);
  if (w->gpu) gm_bind_thread();
  for (long i = 0; i < w->calls; ++i) {
    if (w->turns) turn_wait(i * w->nthreads + w->index);
    run_on(w, w->comm, i, who);
    if (w->churn > 0 && (i + 1) % w->churn == 0) {
      MPI_Comm copy;
      MPI_Comm_dup(w->comm, &copy);
      for (long k = 0; k < 3; ++k) run_on(w, copy, w->calls + i * 3 + k, who);
      MPI_Comm_free(&copy);
      w->churned++;
    }
    if (w->turns) turn_pass();
  }
  return NULL;
}

static const char* arg_text(int argc, char** argv, const char* name, const char* fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (!strcmp(argv[i], name)) return argv[i + 1];
  }
  return fallback;
}

static long arg_long(int argc, char** argv, const char* name, long fallback) {
  const char* text = arg_text(argc, argv, name, NULL);
  return text ? atol(text) : fallback;
}

int main(int argc, char** argv) {
  int provided = MPI_THREAD_SINGLE;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) return 2;
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (provided < MPI_THREAD_MULTIPLE) {
    if (rank == 0)
      printf("SKIP: the MPI provides thread level %d, not MPI_THREAD_MULTIPLE (%d)\n", provided,
             MPI_THREAD_MULTIPLE);
    MPI_Finalize();
    return 77;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const int nthreads = (int)arg_long(argc, argv, "--threads", 4);
  const long calls = arg_long(argc, argv, "--calls", 250);
  const char* memory = arg_text(argc, argv, "--memory", "host");
  const int gpu = !strcmp(memory, "gpu");
  const char* order = arg_text(argc, argv, "--gpu-order", "free");
  const int turns = gpu && !strcmp(order, "turns");
  if (nthreads < 1 || nthreads > kMaxThreads || calls < 0 || (!gpu && strcmp(memory, "host")) ||
      (strcmp(order, "free") && strcmp(order, "turns"))) {
    if (rank == 0) fprintf(stderr, "usage: threads_test [--threads 1-%d] [--calls N] "
                                   "[--max-bytes B] [--churn K] [--seed S] [--memory host|gpu] "
                                   "[--gpu-order free|turns]\n",
                           kMaxThreads);
    MPI_Finalize();
    return 2;
  }
  if (gpu && !rk_gpu_ready()) {
    MPI_Finalize();
    return 77;
  }
  int failed = 0;
  efacoll_resource_usage u;
  const int active = efacoll_usage(&u) == 0;
  if (active && u.thread_multiple != 1) {
    printf("FAIL rank %d: efacoll does not report MPI_THREAD_MULTIPLE\n", rank);
    failed = 1;
  }
  if (rank == 0) {
    printf("threads_test: %d ranks x %d threads x %ld calls, up to %ld bytes, %s memory%s, "
           "efacoll %s\n", size, nthreads, calls, arg_long(argc, argv, "--max-bytes", 1 << 20),
           memory, turns ? " (threads take turns)" : "",
           active ? "active (MPI_THREAD_MULTIPLE)" : "inactive");
    fflush(stdout);
  }

  worker w[kMaxThreads];
  memset(w, 0, sizeof(w));
  for (int t = 0; t < nthreads; ++t) {
    w[t].index = t;
    w[t].rank = rank;
    w[t].calls = calls;
    w[t].churn = arg_long(argc, argv, "--churn", 50);
    w[t].max_bytes = (size_t)arg_long(argc, argv, "--max-bytes", 1 << 20);
    w[t].seed = (uint64_t)arg_long(argc, argv, "--seed", 1);
    w[t].gpu = gpu;
    w[t].turns = turns;
    w[t].nthreads = nthreads;
    MPI_Comm_dup(MPI_COMM_WORLD, &w[t].comm);
  }
  const unsigned long long engine_before = tu_engine_calls();
  const double t0 = MPI_Wtime();
  pthread_t th[kMaxThreads];
  for (int t = 0; t < nthreads; ++t) pthread_create(&th[t], NULL, thread_main, &w[t]);
  for (int t = 0; t < nthreads; ++t) pthread_join(th[t], NULL);
  const double secs = MPI_Wtime() - t0;

  long mine[4] = {0, 0, 0, 0};
  for (int t = 0; t < nthreads; ++t) {
    mine[0] += w[t].tally.calls;
    mine[1] += w[t].tally.mismatches;
    mine[2] += w[t].tally.errors;
    mine[3] += w[t].churned;
    MPI_Comm_free(&w[t].comm);
  }
  /* Every call went to efacoll: GPU buffers, or host buffers forced (EFACOLL_HOST_BUFFERS=1). */
  const unsigned long long ran = tu_engine_calls() - engine_before;
  if (active && ran < (unsigned long long)mine[0]) {
    printf("FAIL rank %d: efacoll ran %llu of %ld calls\n", rank, ran, mine[0]);
    failed = 1;
  }
  long total[4];
  PMPI_Allreduce(mine, total, 4, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (total[1] || total[2]) failed = 1;
  if (!tu_efacoll_ran()) failed = 1;
  int any = 0;
  PMPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("RESULT threads %d per rank, calls %ld (summed over ranks), communicators created and "
           "freed by threads %ld, mismatches %ld (expected 0), errors %ld (expected 0), hangs 0, "
           "%.1f s: %s\n",
           nthreads, total[0], total[3], total[1], total[2], secs, any ? "FAILED" : "passed");
    fflush(stdout);
  }
  MPI_Finalize();
  return any ? 1 : 0;
}

/* soak_test: --calls N random collectives (collective, size 0 ... --max-bytes, type, op, in
 * place, communicator) on MPI_COMM_WORLD and on duplicates and splits created and freed during
 * the run, each compared with PMPI on the same inputs. Every --report-every calls, and at the
 * end, rank 0 prints calls, mismatches, errors, resident memory (the largest rank's) and
 * efacoll's MR cache and communicators.
 *
 * With --memory gpu, efacoll's buffers are on the GPU (local rank % GPUs): device or managed
 * memory, one of the two on the host now and then (PMPI's reference stays on the host), and the
 * GPU's memory in use is reported and bounded like resident memory; without a GPU it prints
 * "SKIP: no GPU (why)" and exits 77.
 *
 * Fails (exit 1) on any mismatch or error; when resident memory after the first tenth of the
 * run grows past --rss-factor x its value then + --rss-slack-mib (GPU memory: the same factor
 * + --gpu-slack-mib); when the MR cache holds more than its capacity; and when efacoll still
 * holds communicators that were freed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_memory.h"
#include "mpi_test_util.h"
#include "random_call.h"
#include "resources.h"

enum { kMaxSlots = 16 };

typedef struct {
  long calls;
  size_t max_bytes;
  uint64_t seed;
  long report_every;
  double rss_factor;
  long rss_slack_mib;
  int slots;
  int gpu;
  long gpu_slack_mib;
} options;

static int parse(int argc, char** argv, options* o) {
  o->calls = 3000;
  o->max_bytes = (size_t)8 << 20;
  o->seed = 1;
  o->report_every = 0;
  o->rss_factor = 1.5;
  o->rss_slack_mib = 64;
  o->slots = 6;
  o->gpu = 0;
  o->gpu_slack_mib = 256;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) return 0;
    if (!strcmp(a, "--calls"))
      o->calls = atol(v);
    else if (!strcmp(a, "--max-bytes"))
      o->max_bytes = (size_t)atoll(v);
    else if (!strcmp(a, "--seed"))
      o->seed = (uint64_t)atoll(v);
    else if (!strcmp(a, "--report-every"))
      o->report_every = atol(v);
    else if (!strcmp(a, "--rss-factor"))
      o->rss_factor = atof(v);
    else if (!strcmp(a, "--rss-slack-mib"))
      o->rss_slack_mib = atol(v);
    else if (!strcmp(a, "--slots"))
      o->slots = atoi(v);
    else if (!strcmp(a, "--gpu-slack-mib"))
      o->gpu_slack_mib = atol(v);
    else if (!strcmp(a, "--memory") && (!strcmp(v, "host") || !strcmp(v, "gpu")))
      o->gpu = !strcmp(v, "gpu");
    else
      return 0;
    ++i;
  }
  if (o->report_every <= 0) o->report_every = o->calls / 10 > 0 ? o->calls / 10 : 1;
  if (o->slots < 1 || o->slots > kMaxSlots) return 0;
  return o->calls >= 0;
}

/* The communicators beside world: a slot is empty, or holds a duplicate or split of world
 * (MPI_COMM_NULL on ranks a split left out). Every rank takes the same steps on a slot. */
typedef struct {
  int used;
  MPI_Comm comm;
} slot;

static void slot_change(slot* s, uint64_t h, int rank, int size) {
  if (s->used) {
    if (s->comm != MPI_COMM_NULL) MPI_Comm_free(&s->comm);
    s->used = 0;
    return;
  }
  switch ((h >> 16) % 3) {
    case 0:
      MPI_Comm_dup(MPI_COMM_WORLD, &s->comm);
      break;
    case 1: /* halves, reversed */
      MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &s->comm);
      break;
    default: { /* the first k ranks; the others get MPI_COMM_NULL */
      int k = 1 + (int)((h >> 24) % (uint64_t)size);
      MPI_Comm_split(MPI_COMM_WORLD, rank < k ? 0 : MPI_UNDEFINED, rank, &s->comm);
      break;
    }
  }
  s->used = 1;
}

typedef struct {
  long calls, mismatches, errors; /* summed over ranks */
  long rss_kib, peak_kib;         /* the largest rank's */
  long mr_entries, mr_bytes, mr_capacity, comms, sub_comms;
  long engine_calls;
  long gpu_kib; /* GPU memory in use, the largest GPU's; -1 without --memory gpu */
  long ipc_mappings, ipc_capacity, ipc_awaiting_close; /* peers' GPU buffers mapped here */
} snapshot;

static snapshot take_snapshot(const rk_tally* t, int gpu) {
  efacoll_resource_usage u;
  int have = efacoll_usage(&u) == 0;
  long sums[4] = {t->calls, t->mismatches, t->errors, (long)tu_engine_calls()};
  long maxes[11] = {rss_now_kib(),
                    rss_peak_kib(),
                    have ? (long)u.mr_cache_entries : 0,
                    have ? (long)u.mr_cache_bytes : 0,
                    have ? (long)u.mr_cache_capacity : 0,
                    have ? (long)u.communicators : 0,
                    have ? (long)u.sub_communicators : 0,
                    gpu ? (long)(gm_used_bytes() / 1024) : -1,
                    have ? (long)u.ipc_mappings_cached : 0,
                    have ? (long)u.ipc_mappings_capacity : 0,
                    have ? (long)u.ipc_mappings_awaiting_close : 0};
  long s[4], m[11];
  PMPI_Allreduce(sums, s, 4, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  PMPI_Allreduce(maxes, m, 11, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
  snapshot r = {s[0], s[1], s[2], m[0], m[1], m[2], m[3], m[4],
                m[5], m[6], s[3], m[7], m[8], m[9], m[10]};
  return r;
}

static void print_snapshot(const char* when, long done, double secs, const snapshot* s) {
  printf(
      "%-6s %8ld collectives %9.1f s | calls on all ranks %ld (efacoll ran %ld), mismatches %ld, "
      "errors %ld | VmRSS %.1f MiB, peak %.1f MiB | MR cache %ld entries (cap %ld), %.1f MiB "
      "| efacoll comms %ld (+%ld sub)",
      when, done, secs, s->calls, s->engine_calls, s->mismatches, s->errors, s->rss_kib / 1024.0,
      s->peak_kib / 1024.0, s->mr_entries, s->mr_capacity, s->mr_bytes / 1048576.0, s->comms,
      s->sub_comms);
  if (s->gpu_kib >= 0) {
    printf(
        " | GPU memory in use %.1f MiB | peers' buffers mapped %ld (cap %ld), %ld awaiting close",
        s->gpu_kib / 1024.0, s->ipc_mappings, s->ipc_capacity, s->ipc_awaiting_close);
  }
  printf("\n");
  fflush(stdout);
}

/* Memory in use (KiB) from the first snapshot after warm-up on: the bound is on its growth. */
typedef struct {
  long baseline, worst;
} growth;

static void growth_see(growth* g, long kib, int warmed_up) {
  if (warmed_up && g->baseline < 0) g->baseline = kib;
  if (g->baseline >= 0 && kib > g->worst) g->worst = kib;
}

/* Rank 0's verdict on one kind of memory: 1 when it grew past factor x baseline + slack. */
static int growth_failed(const char* what, const growth* g, double factor, long slack_mib,
                         long warmup, long peak_kib) {
  if (g->baseline < 0) return 0;
  const long bound_kib = (long)(factor * (double)g->baseline) + slack_mib * 1024;
  printf(
      "%s: %.1f MiB after warm-up (%ld collectives), at most %.1f MiB later (bound %.1f MiB), "
      "peak %.1f MiB\n",
      what, g->baseline / 1024.0, warmup, g->worst / 1024.0, bound_kib / 1024.0, peak_kib / 1024.0);
  if (g->worst <= bound_kib) return 0;
  printf("FAIL: %s grew past its bound\n", what);
  return 1;
}

int main(int argc, char** argv) {
  if (MPI_Init(&argc, &argv) != MPI_SUCCESS) return 2;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN); /* inherited by dups and splits */
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  options o;
  if (!parse(argc, argv, &o)) {
    if (rank == 0)
      fprintf(stderr,
              "usage: soak_test [--calls N] [--max-bytes B] [--seed S] [--report-every K] "
              "[--rss-factor F] [--rss-slack-mib M] [--slots 1-%d] [--memory host|gpu] "
              "[--gpu-slack-mib M]\n",
              kMaxSlots);
    MPI_Finalize();
    return 2;
  }
  if (o.gpu && !rk_gpu_ready()) {
    MPI_Finalize();
    return 77;
  }
  int failed = 0;
  efacoll_resource_usage u;
  if (efacoll_usage(&u) == 0 && u.thread_multiple != 0) {
    printf("FAIL rank %d: efacoll reports MPI_THREAD_MULTIPLE after MPI_Init\n", rank);
    failed = 1;
  }
  if (rank == 0) {
    printf(
        "soak_test: %ld collectives, %d ranks, up to %zu bytes, seed %llu, %d communicator "
        "slots\n",
        o.calls, size, o.max_bytes, (unsigned long long)o.seed, o.slots);
    fflush(stdout);
  }

  slot slots[kMaxSlots];
  memset(slots, 0, sizeof(slots));
  rk_tally tally = {0, 0, 0};
  long created = 0, mr_most = 0;
  growth rss = {-1, 0}, gpu = {-1, 0};
  long gpu_peak_kib = 0;
  const long warmup = o.calls / 10;
  const double t0 = MPI_Wtime();
  char who[64];
  snprintf(who, sizeof(who), "rank %d", rank);

  for (long i = 0; i < o.calls; ++i) {
    const uint64_t h = tu_hash(o.seed, (uint64_t)i, 0);
    if (tu_hash(h, 7, 0) % 40 == 0) {
      slot* s = &slots[(h >> 8) % (uint64_t)o.slots];
      created += !s->used;
      slot_change(s, h, rank, size);
    }
    const int pick = (int)((h >> 32) % (uint64_t)(o.slots + 1));
    MPI_Comm comm = MPI_COMM_WORLD;
    if (pick > 0 && slots[pick - 1].used) comm = slots[pick - 1].comm;
    if (comm != MPI_COMM_NULL) {
      int csize = 0;
      MPI_Comm_size(comm, &csize);
      rk_call c;
      rk_draw(tu_hash(h, 9, 0), csize, o.max_bytes, &c);
      if (o.gpu) rk_draw_gpu_memory(tu_hash(h, 10, 0), &c);
      rk_run_counted(&c, comm, who, &tally, 20);
    }

    const long done = i + 1;
    if (done % o.report_every != 0 && done != o.calls) continue;
    snapshot s = take_snapshot(&tally, o.gpu);
    growth_see(&rss, s.rss_kib, done >= warmup);
    if (o.gpu) growth_see(&gpu, s.gpu_kib, done >= warmup);
    if (s.gpu_kib > gpu_peak_kib) gpu_peak_kib = s.gpu_kib;
    if (s.mr_entries > mr_most) mr_most = s.mr_entries;
    if (rank == 0) {
      print_snapshot(done == o.calls ? "end" : "after", done, MPI_Wtime() - t0, &s);
      if (s.mr_capacity > 0 && s.mr_entries > s.mr_capacity) {
        printf("FAIL: the MR cache holds %ld entries, more than its capacity %ld\n", s.mr_entries,
               s.mr_capacity);
        failed = 1;
      }
      if (s.comms > o.slots + 1) {
        printf("FAIL: efacoll holds %ld communicators; at most %d are alive\n", s.comms,
               o.slots + 1);
        failed = 1;
      }
      /* One thread: every mapping is idle between calls, and none waits for a kernel. */
      if (s.ipc_mappings > s.ipc_capacity || s.ipc_awaiting_close > 0) {
        printf("FAIL: %ld peers' buffers stay mapped (cap %ld), %ld more await their close\n",
               s.ipc_mappings, s.ipc_capacity, s.ipc_awaiting_close);
        failed = 1;
      }
      if (s.sub_comms > 2 * s.comms) {
        printf("FAIL: efacoll holds %ld sub-communicators for %ld communicators (2 each at most)\n",
               s.sub_comms, s.comms);
        failed = 1;
      }
    }
  }

  for (int k = 0; k < o.slots; ++k) {
    if (slots[k].used) slot_change(&slots[k], 0, rank, size);
  }
  snapshot end = take_snapshot(&tally, o.gpu);
  if (!tu_efacoll_ran()) failed = 1;
  if (rank == 0) {
    printf("communicators created and freed during the run: %ld\n", created);
    printf("after freeing them: efacoll holds %ld communicator(s) (+%ld sub), MR cache %ld entries",
           end.comms, end.sub_comms, end.mr_entries);
    if (o.gpu) {
      printf(", GPU memory in use %.1f MiB, peers' buffers mapped %ld, %ld awaiting close",
             end.gpu_kib / 1024.0, end.ipc_mappings, end.ipc_awaiting_close);
    }
    printf("\n");
    if (end.comms > 1 || end.sub_comms > 2) {
      printf("FAIL: efacoll still holds communicators that MPI freed\n");
      failed = 1;
    }
    if (end.ipc_awaiting_close > 0) {
      printf("FAIL: peers' buffers mapped here still await their close with no call under way\n");
      failed = 1;
    }
    if (end.mismatches || end.errors) failed = 1;
    failed |=
        growth_failed("resident memory", &rss, o.rss_factor, o.rss_slack_mib, warmup, end.peak_kib);
    if (o.gpu) {
      failed |= growth_failed("GPU memory in use", &gpu, o.rss_factor, o.gpu_slack_mib, warmup,
                              gpu_peak_kib);
    }
    char gpu_peak[64] = "";
    if (o.gpu)
      snprintf(gpu_peak, sizeof(gpu_peak), ", peak GPU memory in use %.1f MiB",
               gpu_peak_kib / 1024.0);
    printf(
        "RESULT collectives %ld, calls on all ranks %ld, mismatches %ld (expected 0), errors %ld "
        "(expected 0), hangs 0, peak RSS %.1f MiB%s, MR cache max %ld entries: %s\n",
        o.calls, end.calls, end.mismatches, end.errors, end.peak_kib / 1024.0, gpu_peak, mr_most,
        failed ? "FAILED" : "passed");
    fflush(stdout);
  }
  int any = 0;
  PMPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  failed = any;
  MPI_Finalize();
  return failed ? 1 : 0;
}

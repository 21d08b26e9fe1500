/* efacoll's C API, for programs that want to know what the library did. With the library
 * preloaded, find these with dlsym(RTLD_DEFAULT, ...). */
#ifndef EFACOLL_EFACOLL_H
#define EFACOLL_EFACOLL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  EFACOLL_ALLREDUCE = 0,
  EFACOLL_ALLGATHER = 1,
  EFACOLL_REDUCE_SCATTER = 2, /* MPI_Reduce_scatter and MPI_Reduce_scatter_block */
  EFACOLL_NUM_COLLECTIVES = 3
} efacoll_collective;

typedef struct {
  unsigned long long engine_calls; /* run by efacoll */
  unsigned long long mpi_calls;    /* passed to the MPI library */
  unsigned long long engine_bytes;
} efacoll_counters;

/* 0 on success. */
int efacoll_get_counters(efacoll_collective coll, efacoll_counters* out);

/* What efacoll holds now: for soak tests and leak hunts. Fields are only ever added at the end,
 * so a program must be built against the header of the library it runs with. */
typedef struct {
  size_t communicators;             /* efacoll communicators alive: one per MPI communicator */
  size_t mr_cache_entries;          /* registrations kept across calls */
  size_t mr_cache_bytes;            /* the memory they cover */
  size_t mr_cache_capacity;         /* EFACOLL_MR_CACHE_ENTRIES (0: the provider needs none) */
  unsigned long long registrations; /* made since MPI_Init, cached or for one call */
  int thread_multiple;        /* 1: MPI_THREAD_MULTIPLE, calls of several threads interleave; 0: no
                                 thread locks are taken for MPI's sake */
  size_t retired_bytes_held;  /* memory kept from reuse after failed calls, until the writes
                                 their peers may still make have come */
  size_t retired_bytes_total; /* retired since MPI_Init */
  size_t sub_communicators;   /* made for hierarchical calls (on declared or real nodes), freed
                                 with the communicators they serve; not in `communicators` */
  size_t gpu_bytes_awaiting_free;     /* efacoll's own GPU and pinned memory it no longer uses,
                                         given back while its low-latency kernels ran: freed once
                                         none runs (a free would wait for them) */
  size_t ipc_mappings_cached;         /* peers' user buffers kept mapped (CUDA IPC) across calls;
                                         not the communicators' workspaces, mapped while they
                                         live */
  size_t ipc_mappings_capacity;       /* kept at most, beside those calls under way use */
  size_t ipc_mappings_awaiting_close; /* peers' memory (user buffers, workspaces) no longer
                                         used, mapped until none of efacoll's low-latency kernels
                                         runs (a close would wait for them): each keeps the
                                         peer's allocation alive */
} efacoll_resource_usage;

/* 0 on success, -1 when efacoll is inactive. */
int efacoll_get_resource_usage(efacoll_resource_usage* out);
/* The libfabric provider efacoll's traffic uses, or NULL when efacoll is inactive. */
const char* efacoll_provider(void);
/* Forces algorithms from the next collective on, in EFACOLL_ALGO's grammar ("auto", "ring",
 * "allreduce:tree", ...). Every rank must pass the same before its next collective (benchmarks
 * compare algorithms in one run this way). 0 on success, -1 for a spec it cannot read. */
int efacoll_set_algo(const char* spec);
/* The algorithm of this process's last collective that efacoll ran through the fabric, and the
 * time the cost model predicted for it (microseconds; 0 without a model). */
const char* efacoll_last_algorithm(void);
double efacoll_last_predicted_us(void);
/* The chunk size and channel count of that collective. 0 on success, -1 when efacoll is
 * inactive. */
int efacoll_last_chunking(size_t* chunk_bytes, int* channels);
/* 1 when that collective ran one of several algorithms its call shape's first calls measure
 * (EFACOLL_TUNE_TRIALS), 0 otherwise. Every rank sees the same, so a benchmark can call until
 * it reads 0 and then measure the kept choice. */
int efacoll_last_on_trial(void);

#ifdef __cplusplus
}
#endif
#endif

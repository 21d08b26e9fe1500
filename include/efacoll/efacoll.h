/* efacoll's C API, for programs that want to know what the library did. With the library
 * preloaded, find these with dlsym(RTLD_DEFAULT, ...). */
#ifndef EFACOLL_EFACOLL_H
#define EFACOLL_EFACOLL_H

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
/* The libfabric provider efacoll's traffic uses, or NULL when efacoll is inactive. */
const char* efacoll_provider(void);

#ifdef __cplusplus
}
#endif
#endif

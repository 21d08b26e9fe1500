/* MPI_Allgather on several types and counts, in and out of place, compared with PMPI. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_cases.h"

/* MPI_Allgather, or PMPI_Allgather where `pmpi`; their large-count forms where
 * g_test.large_count. In place, the send count and type are ignored: pass values that would be
 * wrong. */
static int call(int pmpi, const void* send, void* recv, int count, MPI_Datatype type,
                MPI_Comm comm) {
  const int inplace = send == MPI_IN_PLACE;
  const int scount = inplace ? -7 : count;
  const MPI_Datatype stype = inplace ? MPI_DATATYPE_NULL : type;
#if TU_HAVE_LARGE_COUNT
  if (g_test.large_count) {
    return pmpi ? PMPI_Allgather_c(send, scount, stype, recv, count, type, comm)
                : MPI_Allgather_c(send, scount, stype, recv, count, type, comm);
  }
#endif
  return pmpi ? PMPI_Allgather(send, scount, stype, recv, count, type, comm)
              : MPI_Allgather(send, scount, stype, recv, count, type, comm);
}

int run_allgather(MPI_Datatype type, const char* type_name, int count, MPI_Comm comm,
                  const char* comm_name, int inplace) {
  int rank, size, tsize;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Comm_size(comm, &size);
  PMPI_Type_size(type, &tsize);
  char name[256];
  snprintf(name, sizeof(name), "allgather%s/%s/%s/n=%d%s", g_test.large_count ? "_c" : "",
           comm_name, type_name, count, inplace ? "/inplace" : "");
  const test_type bytes = {MPI_BYTE, "bytes", 1, TK_BYTE};
  const size_t block = (size_t)count * (size_t)tsize, total = block * (size_t)size;

  unsigned char* send = malloc(block + 1);
  tu_fill_random(send, block, tu_seed(name), rank);
  unsigned char* send_copy = malloc(block + 1);
  memcpy(send_copy, send, block);
  guarded_buf got, want;
  tu_gbuf_alloc(&got, total);
  tu_gbuf_alloc(&want, total);
  if (inplace) {
    memcpy(got.base + block * (size_t)rank, send, block);
    memcpy(want.base + block * (size_t)rank, send, block);
  }

  counter_snapshot before;
  tu_counters(&before);
  int rc = call(0, inplace ? MPI_IN_PLACE : send, got.base, count, type, comm);
  char why[512] = "";
  int counted = tu_counted_once(&before, EFACOLL_ALLGATHER, 1, why, sizeof(why));
  int rc_ref = call(1, inplace ? MPI_IN_PLACE : send_copy, want.base, count, type, comm);
  int ok;
  if (rc != MPI_SUCCESS || rc_ref != MPI_SUCCESS) {
    ok = tu_check(0, name, "MPI returned %d (%s), PMPI returned %d", rc, tu_error_class_name(rc),
                  rc_ref);
  } else {
    long bad = tu_first_mismatch(&bytes, got.base, want.base, total);
    if (bad >= 0) {
      ok = tu_check(0, name,
                    "first mismatching byte %ld of %zu (element %ld of rank %ld's block): got "
                    "0x%02x, expected 0x%02x",
                    bad, total, (long)((size_t)bad % block / (size_t)tsize),
                    (long)((size_t)bad / block), got.base[bad], want.base[bad]);
    } else if (!tu_gbuf_untouched_from(&got, got.bytes)) {
      ok = tu_check(0, name, "wrote past the end of the receive buffer (%zu bytes)", got.bytes);
    } else if (!inplace && memcmp(send, send_copy, block) != 0) {
      ok = tu_check(0, name, "modified the send buffer");
    } else {
      ok = tu_check(counted, name, "%s", why);
    }
  }
  free(send);
  free(send_copy);
  tu_gbuf_free(&got);
  tu_gbuf_free(&want);
  return ok;
}

void allgather_cases(MPI_Comm comm, const char* comm_name, int full) {
  static const struct {
    MPI_Datatype type;
    const char* name;
  } kTypes[] = {
      {MPI_INT, "MPI_INT"}, {MPI_DOUBLE, "MPI_DOUBLE"}, {MPI_CHAR, "MPI_CHAR"}, {MPI_BYTE, "MPI_BYTE"}};
  int size;
  PMPI_Comm_size(comm, &size);
  for (size_t i = 0; i < sizeof(kTypes) / sizeof(kTypes[0]); ++i) {
    int tsize;
    PMPI_Type_size(kTypes[i].type, &tsize);
    /* The multi-chunk count makes about 100000 bytes in all. */
    const int counts[] = {0, 1, size - 1, 1001, (100000 / tsize / size) | 1};
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); ++k) {
      if (k == 2 && size - 1 <= 1) continue;
      if (!full && counts[k] == 0) continue;
      if (g_test.quick && counts[k] > 1001) continue;
      for (int inplace = 0; inplace < 2; ++inplace) {
        run_allgather(kTypes[i].type, kTypes[i].name, counts[k], comm, comm_name, inplace);
      }
    }
  }
}

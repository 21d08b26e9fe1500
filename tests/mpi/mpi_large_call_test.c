/* Calls whose buffers pass 2^31 bytes on the ordinary (int-count) forms: an in-place allreduce
 * of 2^28 + 2^20 doubles, an in-place allgather of 2^30 + 2^20 bytes from each of 2 ranks, and an
 * in-place reduce-scatter-block whose input passes 2^31 bytes; and where the MPI has the
 * large-count forms, an MPI_Allreduce_c of 2^31 + 2^20 elements. Results checked element by element
 * against the formula (each element's sum is exact in double and in 8-bit range for bytes), not
 * against the host MPI. Skips (77) where the machine has too little memory, saying so.
 * 2 ranks, EFACOLL_HOST_BUFFERS=1. Exit 0 pass, 1 fail. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_test_util.h"

static const size_t kDoubles = (1u << 28) + (1u << 20);  /* 2.15 GB */
static const size_t kBlockBytes = (1u << 30) + (1u << 20); /* x 2 ranks: 2.15 GB */


static int report(const char* what, int rank, int rc, size_t wrong_at, int wrong) {
  if (rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, text, &len);
    printf("FAIL large/%s: rank %d: %s\n", what, rank, text);
    return 1;
  }
  if (wrong) {
    printf("FAIL large/%s: rank %d: element %zu wrong\n", what, rank, wrong_at);
    return 1;
  }
  printf("ok large/%s rank %d\n", what, rank);
  return 0;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0, failed = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const char* absent = tu_efacoll_absence();
  if (absent) {  /* the host MPI alone proves nothing here */
    printf("FAIL large rank %d: %s\n", rank, absent);
    MPI_Finalize();
    return 1;
  }
  /* Each rank holds one 2.15 GB buffer and the engine a scratch as large: 2 ranks, 9 GB. */
  int enough = size == 2 && tu_proc_kib_field("/proc/meminfo", "MemAvailable") >= (12ull << 30);
  MPI_Allreduce(MPI_IN_PLACE, &enough, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!enough) {
    if (rank == 0)
      printf("SKIP large: needs 2 ranks and 12 GiB of available memory (MemAvailable)\n");
    MPI_Finalize();
    return 77;
  }

  double* d = malloc(kDoubles * sizeof(double));
  if (!d) MPI_Abort(MPI_COMM_WORLD, 1);
  for (size_t i = 0; i < kDoubles; ++i) d[i] = (double)(i % 4099) + rank;
  int rc = MPI_Allreduce(MPI_IN_PLACE, d, (int)kDoubles, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  size_t at = 0;
  int wrong = 0;
  for (size_t i = 0; rc == MPI_SUCCESS && i < kDoubles && !wrong; ++i)
    if (d[i] != 2.0 * (double)(i % 4099) + 1) wrong = 1, at = i;
  failed |= report("allreduce", rank, rc, at, wrong);
  free(d);

  uint8_t* b = malloc(2 * kBlockBytes);
  if (!b) MPI_Abort(MPI_COMM_WORLD, 1);
  for (size_t i = 0; i < kBlockBytes; ++i) b[rank * kBlockBytes + i] = (uint8_t)(i * 7 + rank);
  rc = MPI_Allgather(MPI_IN_PLACE, 0, MPI_BYTE, b, (int)kBlockBytes, MPI_BYTE, MPI_COMM_WORLD);
  wrong = 0;
  for (size_t i = 0; rc == MPI_SUCCESS && i < 2 * kBlockBytes && !wrong; ++i)
    if (b[i] != (uint8_t)((i % kBlockBytes) * 7 + i / kBlockBytes)) wrong = 1, at = i;
  failed |= report("allgather", rank, rc, at, wrong);

  /* Reduce-scatter-block in place: the whole input in b, this rank's block at its start. Sums of
   * two values below 100 stay in 8-bit range. */
  for (size_t i = 0; i < 2 * kBlockBytes; ++i) b[i] = (uint8_t)(i % 97 + rank);
  rc = MPI_Reduce_scatter_block(MPI_IN_PLACE, b, (int)kBlockBytes, MPI_UNSIGNED_CHAR, MPI_SUM,
                                MPI_COMM_WORLD);
  wrong = 0;
  for (size_t i = 0; rc == MPI_SUCCESS && i < kBlockBytes && !wrong; ++i) {
    const size_t global = rank * kBlockBytes + i;
    if (b[i] != (uint8_t)(2 * (global % 97) + 1)) wrong = 1, at = i;
  }
  failed |= report("reduce_scatter_block", rank, rc, at, wrong);

#if TU_HAVE_LARGE_COUNT
  /* The large-count form with more elements than an int holds: 2^31 + 2^20 bytes summed in
   * place (the same in-range sums). */
  const MPI_Count wide = ((MPI_Count)1 << 31) + (1 << 20);
  for (size_t i = 0; i < (size_t)wide; ++i) b[i] = (uint8_t)(i % 97 + rank);
  rc = MPI_Allreduce_c(MPI_IN_PLACE, b, wide, MPI_UNSIGNED_CHAR, MPI_SUM, MPI_COMM_WORLD);
  wrong = 0;
  for (size_t i = 0; rc == MPI_SUCCESS && i < (size_t)wide && !wrong; ++i)
    if (b[i] != (uint8_t)(2 * (i % 97) + 1)) wrong = 1, at = i;
  failed |= report("allreduce_c past 2^31 elements", rank, rc, at, wrong);
#else
  if (rank == 0) printf("skip large/allreduce_c: MPI_VERSION %d has no large-count forms\n", MPI_VERSION);
#endif
  free(b);

  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  const int ran = tu_efacoll_ran();
  MPI_Finalize();
  return any || !ran ? 1 : 0;
}

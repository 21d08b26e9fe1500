/* The large-count forms (MPI_Allreduce_c, MPI_Allgather_c, MPI_Reduce_scatter_c,
 * MPI_Reduce_scatter_block_c; MPI-4) where the MPI defines them: the reduction subset and the
 * allgather cases through them, compared with PMPI's large-count forms and counted as efacoll's;
 * and negative counts refused with MPI_ERR_COUNT, as the ordinary forms refuse them. Counts past
 * 2^31 elements: mpi_large_call_test.c. */
#include <stdio.h>
#include <string.h>

#include "mpi_cases.h"
#include "mpi_error_strings.h"

#if TU_HAVE_LARGE_COUNT
/* A negative count through `what`'s large-count form: MPI_ERR_COUNT, raised by efacoll, nothing
 * counted and nothing written. */
static void negative_count_case(const char* what, int rc, const counter_snapshot* before,
                                efacoll_collective coll, const unsigned char* recv, size_t bytes) {
  char name[128], why[512] = "";
  snprintf(name, sizeof(name), "error_c/world/%s/negative-count", what);
  const int counted = tu_counted_once(before, coll, TU_NOT_COUNTED, why, sizeof(why));
  tu_check(error_class(rc) == MPI_ERR_COUNT, name, "error class %d (%s), expected MPI_ERR_COUNT",
           error_class(rc), tu_error_class_name(error_class(rc)));
  if (mpi_takes_error_strings() && rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING] = "", prefix[64];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    snprintf(prefix, sizeof(prefix), "efacoll: %s: ", what);
    tu_check(strncmp(text, prefix, strlen(prefix)) == 0, name,
             "error string \"%s\", expected \"%s...\"", text, prefix);
  }
  size_t changed = 0;
  while (changed < bytes && recv[changed] == 0x5a) ++changed;
  tu_check(changed == bytes, name, "receive byte %zu changed", changed);
  tu_check(counted, name, "%s", why);
}

static void negative_count_cases(void) {
  int size;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  double send[4] = {1, 2, 3, 4};
  unsigned char recv[256];
  MPI_Count counts[64];
  for (int r = 0; r < size && r < 64; ++r) counts[r] = r == size - 1 ? -1 : 1;
  counter_snapshot before;

  memset(recv, 0x5a, sizeof(recv));
  tu_counters(&before);
  int rc = MPI_Allreduce_c(send, recv, -1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  negative_count_case("MPI_Allreduce_c", rc, &before, EFACOLL_ALLREDUCE, recv, sizeof(recv));

  memset(recv, 0x5a, sizeof(recv));
  tu_counters(&before);
  rc = MPI_Allgather_c(send, -2, MPI_DOUBLE, recv, 1, MPI_DOUBLE, MPI_COMM_WORLD);
  negative_count_case("MPI_Allgather_c", rc, &before, EFACOLL_ALLGATHER, recv, sizeof(recv));

  if (size <= 64) {
    memset(recv, 0x5a, sizeof(recv));
    tu_counters(&before);
    rc = MPI_Reduce_scatter_c(send, recv, counts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    negative_count_case("MPI_Reduce_scatter_c", rc, &before, EFACOLL_REDUCE_SCATTER, recv,
                        sizeof(recv));
  }

  memset(recv, 0x5a, sizeof(recv));
  tu_counters(&before);
  rc = MPI_Reduce_scatter_block_c(send, recv, -3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  negative_count_case("MPI_Reduce_scatter_block_c", rc, &before, EFACOLL_REDUCE_SCATTER, recv,
                      sizeof(recv));
}
#endif

void large_count_cases(void) {
#if TU_HAVE_LARGE_COUNT
  g_test.large_count = 1;
  reduction_cases_subset(MPI_COMM_WORLD, "world");
  allgather_cases(MPI_COMM_WORLD, "world", 0);
  g_test.large_count = 0;
  negative_count_cases();
#else
  if (g_test.world_rank == 0) {
    printf("skip: large-count forms: this MPI (MPI_VERSION %d) defines none\n", MPI_VERSION);
  }
#endif
}

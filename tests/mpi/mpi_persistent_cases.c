/* Persistent collectives where the MPI has them (MPI-4's MPI_*_init: MPICH 4; Open MPI 4.1's
 * MPIX_*_init): an allreduce initialised once and started 1,000 times, the input changing
 * between starts, each result against PMPI's blocking call and each start counted as efacoll's;
 * an allgather and a reduce-scatter-block started together with MPI_Startall and completed with
 * MPI_Waitall beside a point-to-point request; the requests freed at the end. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_cases.h"

#if defined(OPEN_MPI)
#include <mpi-ext.h>
#endif

#if MPI_VERSION >= 4
#define TU_PERSISTENT(name) MPI_##name##_init
#define TU_PERSISTENT_NAME "MPI_*_init"
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ)
#define TU_PERSISTENT(name) MPIX_##name##_init
#define TU_PERSISTENT_NAME "MPIX_*_init"
#endif

#ifdef TU_PERSISTENT
static void started_many_times(MPI_Comm comm) {
  enum { kCount = 257, kStarts = 1000 };
  int rank;
  PMPI_Comm_rank(comm, &rank);
  double* send = malloc(sizeof(double) * kCount);
  double* recv = malloc(sizeof(double) * kCount);
  double* want = malloc(sizeof(double) * kCount);
  MPI_Request request = MPI_REQUEST_NULL;
  int rc = TU_PERSISTENT(Allreduce)(send, recv, kCount, MPI_DOUBLE, MPI_SUM, comm, MPI_INFO_NULL,
                                    &request);
  if (!tu_check(rc == MPI_SUCCESS, "persistent/allreduce/init", "returned %d", rc)) return;
  int wrong_at = -1, failed_rc = MPI_SUCCESS;
  counter_snapshot before;
  tu_counters(&before);
  unsigned long long engine_before = before.valid ? before.c[EFACOLL_ALLREDUCE].engine_calls : 0;
  for (int s = 0; s < kStarts && wrong_at < 0 && failed_rc == MPI_SUCCESS; ++s) {
    for (int i = 0; i < kCount; ++i) send[i] = (double)((tu_hash(s, rank, i) % 201)) - 100;
    failed_rc = MPI_Start(&request);
    if (failed_rc == MPI_SUCCESS) failed_rc = MPI_Wait(&request, MPI_STATUS_IGNORE);
    PMPI_Allreduce(send, want, kCount, MPI_DOUBLE, MPI_SUM, comm);
    if (memcmp(recv, want, sizeof(double) * kCount) != 0) wrong_at = s;
  }
  tu_check(failed_rc == MPI_SUCCESS, "persistent/allreduce/starts", "a start returned %d",
           failed_rc);
  tu_check(wrong_at < 0, "persistent/allreduce/starts", "start %d's result differs from PMPI's",
           wrong_at);
  tu_check(request != MPI_REQUEST_NULL, "persistent/allreduce/starts",
           "MPI_Wait freed the persistent request");
  counter_snapshot after;
  tu_counters(&after);
  if (g_test.engine_active && after.valid) {
    const unsigned long long ran = after.c[EFACOLL_ALLREDUCE].engine_calls - engine_before;
    tu_check(ran == kStarts, "persistent/allreduce/counted", "efacoll ran %llu of %d starts", ran,
             kStarts);
  }
  rc = MPI_Request_free(&request);
  tu_check(rc == MPI_SUCCESS && request == MPI_REQUEST_NULL, "persistent/allreduce/free",
           "MPI_Request_free returned %d", rc);
  free(send);
  free(recv);
  free(want);
}

static void started_together(MPI_Comm comm) {
  enum { kBlock = 1003 };
  int rank, size;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Comm_size(comm, &size);
  double* gsend = malloc(sizeof(double) * kBlock);
  double* grecv = malloc(sizeof(double) * kBlock * (size_t)size);
  double* gwant = malloc(sizeof(double) * kBlock * (size_t)size);
  double* rsend = malloc(sizeof(double) * kBlock * (size_t)size);
  double* rrecv = malloc(sizeof(double) * kBlock);
  double* rwant = malloc(sizeof(double) * kBlock);
  MPI_Request r[3];
  TU_PERSISTENT(Allgather)
  (gsend, kBlock, MPI_DOUBLE, grecv, kBlock, MPI_DOUBLE, comm, MPI_INFO_NULL, &r[0]);
  TU_PERSISTENT(Reduce_scatter_block)
  (rsend, rrecv, kBlock, MPI_DOUBLE, MPI_SUM, comm, MPI_INFO_NULL, &r[1]);
  int out = rank, in = -1;
  MPI_Send_init(&out, 1, MPI_INT, (rank + 1) % size, 77, comm, &r[2]);
  for (int round = 0; round < 3; ++round) {
    char name[64];
    snprintf(name, sizeof(name), "persistent/startall/round %d", round);
    for (int i = 0; i < kBlock; ++i) gsend[i] = (double)(tu_hash(round, rank, i) % 97);
    for (int i = 0; i < kBlock * size; ++i) rsend[i] = (double)(tu_hash(round + 9, rank, i) % 89);
    MPI_Request recv_req;
    MPI_Irecv(&in, 1, MPI_INT, (rank + size - 1) % size, 77, comm, &recv_req);
    int rc = MPI_Startall(3, r);
    if (rc == MPI_SUCCESS) rc = MPI_Waitall(3, r, MPI_STATUSES_IGNORE);
    MPI_Wait(&recv_req, MPI_STATUS_IGNORE);
    PMPI_Allgather(gsend, kBlock, MPI_DOUBLE, gwant, kBlock, MPI_DOUBLE, comm);
    PMPI_Reduce_scatter_block(rsend, rwant, kBlock, MPI_DOUBLE, MPI_SUM, comm);
    tu_check(rc == MPI_SUCCESS, name, "returned %d", rc);
    tu_check(memcmp(grecv, gwant, sizeof(double) * kBlock * (size_t)size) == 0, name,
             "allgather differs from PMPI's");
    tu_check(memcmp(rrecv, rwant, sizeof(double) * kBlock) == 0, name,
             "reduce_scatter_block differs from PMPI's");
    tu_check(in == (rank + size - 1) % size, name, "point-to-point value %d", in);
  }
  for (int i = 0; i < 3; ++i) MPI_Request_free(&r[i]);
  free(gsend);
  free(grecv);
  free(gwant);
  free(rsend);
  free(rrecv);
  free(rwant);
}
#endif

void persistent_cases(MPI_Comm comm) {
#ifdef TU_PERSISTENT
  started_many_times(comm);
  started_together(comm);
#else
  (void)comm;
  if (g_test.world_rank == 0) printf("skip: persistent collectives: this MPI defines none\n");
#endif
}

/* The case groups of efacoll_mpi_tests. Every case calls MPI_X (efacoll, when preloaded) and
 * PMPI_X (the MPI library) with the same arguments on separate buffers and compares. */
#ifndef EFACOLL_MPI_CASES_H
#define EFACOLL_MPI_CASES_H

#include <mpi.h>

#include "mpi_test_util.h"

typedef enum { RC_ALLREDUCE, RC_REDUCE_SCATTER, RC_REDUCE_SCATTER_BLOCK, RC_COUNT } red_coll;

/* --- mpi_reduction_cases.c --- */
/* The predefined (type, op) pairs MPI allows; see the table there. */
const test_type* reduction_types(int* n);
const test_op* reduction_ops(int* n);
int pair_allowed(const test_type* t, const test_op* op);
const test_type* find_type(MPI_Datatype type);
const test_op* find_op(MPI_Op op);
/* Inputs whose every reduction is exact and overflow-free (see gen_value there); also for the
 * soak, threads and fork tests. */
void reduction_fill(const test_type* t, MPI_Op op, void* buf, size_t count, uint64_t seed,
                    int rank);
/* reduce_scatter's irregular counts for a total over `size` ranks, with zeros. */
void reduction_split_counts(int total, int size, int* counts);

/* One case; count is the allreduce count, the total over ranks for reduce_scatter (split
 * irregularly, with zeros) and the per-rank block for reduce_scatter_block. Returns 1 if it
 * passed. expect_engine: the call must be counted as run by efacoll. */
int run_reduction(red_coll coll, const test_type* t, const test_op* op, int count, MPI_Comm comm,
                  const char* comm_name, int inplace, int expect_engine);

/* Every allowed pair x counts {0, 1, size-1, 1001, multi-chunk} x the three collectives, out of
 * place; in place at 1001 and multi-chunk. */
void reduction_cases_full(MPI_Comm comm, const char* comm_name);
/* A few types and ops, counts {1, size-1, 1001, multi-chunk}, in and out of place. */
void reduction_cases_subset(MPI_Comm comm, const char* comm_name);

/* --- mpi_allgather_cases.c --- */
int run_allgather(MPI_Datatype type, const char* type_name, int count, MPI_Comm comm,
                  const char* comm_name, int inplace);
/* MPI_INT, MPI_DOUBLE, MPI_CHAR, MPI_BYTE x counts incl. 0, in and out of place. */
void allgather_cases(MPI_Comm comm, const char* comm_name, int full);

/* --- mpi_nonblocking_cases.c --- */
/* The nonblocking forms: results, counters, requests mixed and outstanding, ordering. */
void nonblocking_cases(MPI_Comm comm);

/* --- mpi_persistent_cases.c --- */
/* Persistent collectives (MPI_*_init or Open MPI's MPIX_*_init), started many times. */
void persistent_cases(MPI_Comm comm);

/* --- mpi_large_count_cases.c --- */
/* The large-count (_c) forms where the MPI defines them; a line saying why not where not. */
void large_count_cases(void);

/* --- mpi_misc_cases.c --- */
typedef enum { PT_ALLREDUCE, PT_REDUCE_SCATTER, PT_REDUCE_SCATTER_BLOCK, PT_ALLGATHER } pt_coll;

/* A call described once. */
typedef struct {
  pt_coll coll;
  int count; /* allreduce count, block count, or allgather send count */
  const int* counts;
  MPI_Datatype type; /* allgather: the send type */
  MPI_Op op;
  MPI_Datatype rtype; /* allgather only */
  int rcount;         /* allgather only */
  MPI_Comm comm;
} call_args;

/* Makes the call through MPI_X, or PMPI_X when `pmpi`; its return code. */
int do_call(int pmpi, const call_args* a, const void* send, void* recv);
efacoll_collective counter_of(pt_coll c);
/* MPI_SUCCESS, or the class of an error code. */
int error_class(int rc);

void communicator_cases(void);
void passthrough_cases(MPI_Comm comm, const char* comm_name);
void intercomm_cases(void);
void engine_counted_check(void);

/* --- mpi_error_cases.c --- */
/* Bad input, one argument at a time, on every collective with MPI_ERRORS_RETURN. */
void error_cases(MPI_Comm comm, const char* comm_name);
/* MPI_IN_PLACE on an inter-communicator. */
void intercomm_error_cases(void);
/* `spec` "<collective>:<bad input>" with MPI_ERRORS_ARE_FATAL; returns only if the call did
 * (the exit code then, nonzero). */
int fatal_error_case(const char* spec);

#endif

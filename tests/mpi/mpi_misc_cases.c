/* Communicators, calls efacoll must pass to MPI and inter-communicators. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_cases.h"

/* ---------------------------------------------------------------------------------------- */
/* A call described once, made through MPI_X or PMPI_X. */

int do_call(int pmpi, const call_args* a, const void* send, void* recv) {
  switch (a->coll) {
    case PT_ALLREDUCE:
      return pmpi ? PMPI_Allreduce(send, recv, a->count, a->type, a->op, a->comm)
                  : MPI_Allreduce(send, recv, a->count, a->type, a->op, a->comm);
    case PT_REDUCE_SCATTER:
      return pmpi ? PMPI_Reduce_scatter(send, recv, a->counts, a->type, a->op, a->comm)
                  : MPI_Reduce_scatter(send, recv, a->counts, a->type, a->op, a->comm);
    case PT_REDUCE_SCATTER_BLOCK:
      return pmpi ? PMPI_Reduce_scatter_block(send, recv, a->count, a->type, a->op, a->comm)
                  : MPI_Reduce_scatter_block(send, recv, a->count, a->type, a->op, a->comm);
    default:
      return pmpi ? PMPI_Allgather(send, a->count, a->type, recv, a->rcount, a->rtype, a->comm)
                  : MPI_Allgather(send, a->count, a->type, recv, a->rcount, a->rtype, a->comm);
  }
}

efacoll_collective counter_of(pt_coll c) {
  return c == PT_ALLREDUCE ? EFACOLL_ALLREDUCE
         : c == PT_ALLGATHER ? EFACOLL_ALLGATHER
                             : EFACOLL_REDUCE_SCATTER;
}

int error_class(int rc) {
  int cls = rc;
  if (rc != MPI_SUCCESS) PMPI_Error_class(rc, &cls);
  return cls;
}

enum { EXPECT_SUCCESS, EXPECT_AS_PMPI };

/* Makes the call through MPI_X and PMPI_X from the same send data into separate receive
 * buffers of recv_bytes; compares the first cmp_elems elements of type cmp (on success) or the
 * error classes (on failure: the receive buffers must be untouched). expect_engine: 1 engine,
 * 0 passed to MPI. */
static int compare_call(const char* name, const call_args* a, const void* send, size_t recv_bytes,
                        const test_type* cmp, size_t cmp_elems, int expect_engine, int expect) {
  guarded_buf got, want;
  tu_gbuf_alloc(&got, recv_bytes);
  tu_gbuf_alloc(&want, recv_bytes);
  counter_snapshot before;
  tu_counters(&before);
  int rc = do_call(0, a, send, got.base);
  char why[512] = "";
  int counted = tu_counted_once(&before, counter_of(a->coll), expect_engine, why, sizeof(why));
  int rc_ref = do_call(1, a, send, want.base);
  int cls = error_class(rc), cls_ref = error_class(rc_ref);
  int ok;
  if (cls != cls_ref) {
    ok = tu_check(0, name, "MPI returned error class %d (%s), PMPI %d", cls,
                  tu_error_class_name(cls), cls_ref);
  } else if (expect == EXPECT_SUCCESS && cls != MPI_SUCCESS) {
    ok = tu_check(0, name, "MPI and PMPI failed with class %d (%s)", cls, tu_error_class_name(cls));
  } else if (cls != MPI_SUCCESS) {
    ok = tu_check(tu_gbuf_untouched_from(&got, 0), name,
                  "failed with class %d but wrote into the receive buffer", cls);
    if (ok) ok = tu_check(counted, name, "%s", why);
  } else {
    long bad = tu_first_mismatch(cmp, got.base, want.base, cmp_elems);
    if (bad >= 0) {
      char x[64], y[64];
      tu_format_elem(cmp, got.base, (size_t)bad, x, sizeof(x));
      tu_format_elem(cmp, want.base, (size_t)bad, y, sizeof(y));
      ok = tu_check(0, name, "first mismatch at index %ld of %zu: got %s, expected %s", bad,
                    cmp_elems, x, y);
    } else if (!tu_gbuf_untouched_from(&got, got.bytes)) {
      ok = tu_check(0, name, "wrote past the end of the receive buffer (%zu bytes)", got.bytes);
    } else {
      ok = tu_check(counted, name, "%s", why);
    }
  }
  tu_gbuf_free(&got);
  tu_gbuf_free(&want);
  return ok;
}

static const test_type kIntType = {MPI_INT, "MPI_INT", sizeof(int), TK_INT};

/* ---------------------------------------------------------------------------------------- */
/* Calls efacoll must pass to MPI. */

static void int_sum_fn(void* in, void* inout, int* len, MPI_Datatype* type) {
  int n = *len;
  if (*type != MPI_INT) {
    int tsize;
    MPI_Type_size(*type, &tsize);
    n *= tsize / (int)sizeof(int);
  }
  const int* a = in;
  int* b = inout;
  for (int i = 0; i < n; ++i) b[i] += a[i];
}

static void small_ints(int* v, size_t n, const char* name, int rank) {
  for (size_t i = 0; i < n; ++i) v[i] = (int)(tu_hash(tu_seed(name), (uint64_t)rank, i) % 2001) - 1000;
}

void passthrough_cases(MPI_Comm comm, const char* comm_name) {
  int rank, size;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Comm_size(comm, &size);
  char name[256];
  enum { N = 1001 };
  int* ints = malloc(sizeof(int) * 2 * N * (size_t)size);
  int* counts = malloc(sizeof(int) * (size_t)size);
  for (int r = 0; r < size; ++r) counts[r] = r % 2 ? 0 : 7 + r;
  int total = 0;
  for (int r = 0; r < size; ++r) total += counts[r];

  /* A user-defined commutative op. */
  MPI_Op user_sum;
  MPI_Op_create(int_sum_fn, 1, &user_sum);
  snprintf(name, sizeof(name), "passthrough/%s/allreduce/user_op", comm_name);
  small_ints(ints, N, name, rank);
  call_args a = {PT_ALLREDUCE, N, NULL, MPI_INT, user_sum, MPI_DATATYPE_NULL, 0, comm};
  compare_call(name, &a, ints, N * sizeof(int), &kIntType, N, 0, EXPECT_SUCCESS);

  snprintf(name, sizeof(name), "passthrough/%s/reduce_scatter_block/user_op", comm_name);
  small_ints(ints, (size_t)N * size, name, rank);
  a.coll = PT_REDUCE_SCATTER_BLOCK;
  compare_call(name, &a, ints, N * sizeof(int), &kIntType, N, 0, EXPECT_SUCCESS);

  snprintf(name, sizeof(name), "passthrough/%s/reduce_scatter/user_op", comm_name);
  small_ints(ints, (size_t)total, name, rank);
  a.coll = PT_REDUCE_SCATTER;
  a.counts = counts;
  compare_call(name, &a, ints, (size_t)counts[rank] * sizeof(int) + 1, &kIntType,
               (size_t)counts[rank], 0, EXPECT_SUCCESS);
  a.counts = NULL;

  /* MPI_MINLOC on MPI_2INT: (value, rank) pairs, compared as ints. */
  snprintf(name, sizeof(name), "passthrough/%s/allreduce/MPI_2INT/MPI_MINLOC", comm_name);
  small_ints(ints, 2 * N, name, rank);
  for (int i = 0; i < N; ++i) ints[2 * i + 1] = rank;
  call_args m = {PT_ALLREDUCE, N, NULL, MPI_2INT, MPI_MINLOC, MPI_DATATYPE_NULL, 0, comm};
  compare_call(name, &m, ints, 2 * N * sizeof(int), &kIntType, 2 * N, 0, EXPECT_SUCCESS);

  snprintf(name, sizeof(name), "passthrough/%s/reduce_scatter_block/MPI_2INT/MPI_MAXLOC",
           comm_name);
  small_ints(ints, 2 * (size_t)N * size, name, rank);
  for (int i = 0; i < N * size; ++i) ints[2 * i + 1] = rank;
  m.coll = PT_REDUCE_SCATTER_BLOCK;
  m.op = MPI_MAXLOC;
  compare_call(name, &m, ints, 2 * N * sizeof(int), &kIntType, 2 * N, 0, EXPECT_SUCCESS);

  /* A derived datatype: with a user op it works; with MPI_SUM, efacoll must give what MPI
   * gives (Open MPI: MPI_ERR_OP, predefined ops are for predefined types). */
  MPI_Datatype pair;
  MPI_Type_contiguous(2, MPI_INT, &pair);
  MPI_Type_commit(&pair);
  snprintf(name, sizeof(name), "passthrough/%s/allreduce/contiguous(2,MPI_INT)/user_op", comm_name);
  small_ints(ints, 2 * N, name, rank);
  call_args d = {PT_ALLREDUCE, N, NULL, pair, user_sum, MPI_DATATYPE_NULL, 0, comm};
  compare_call(name, &d, ints, 2 * N * sizeof(int), &kIntType, 2 * N, 0, EXPECT_SUCCESS);
  snprintf(name, sizeof(name), "passthrough/%s/allreduce/contiguous(2,MPI_INT)/MPI_SUM", comm_name);
  d.op = MPI_SUM;
  compare_call(name, &d, ints, 2 * N * sizeof(int), &kIntType, 2 * N, 0, EXPECT_AS_PMPI);

  /* Allgather of a derived type, and with send and receive signatures that differ. */
  snprintf(name, sizeof(name), "passthrough/%s/allgather/contiguous(2,MPI_INT)", comm_name);
  small_ints(ints, 2 * 5, name, rank);
  call_args g = {PT_ALLGATHER, 5, NULL, pair, MPI_OP_NULL, pair, 5, comm};
  compare_call(name, &g, ints, 2 * 5 * sizeof(int) * (size_t)size, &kIntType, 2 * 5 * (size_t)size,
               0, EXPECT_SUCCESS);
  snprintf(name, sizeof(name), "passthrough/%s/allgather/10xMPI_INT-to-5xpair", comm_name);
  g.type = MPI_INT;
  g.count = 10;
  compare_call(name, &g, ints, 2 * 5 * sizeof(int) * (size_t)size, &kIntType, 2 * 5 * (size_t)size,
               0, EXPECT_SUCCESS);
  MPI_Type_free(&pair);

  /* MPI_LONG_DOUBLE: compared by value (x87 long double has padding bytes). */
  snprintf(name, sizeof(name), "passthrough/%s/allreduce/MPI_LONG_DOUBLE/MPI_SUM", comm_name);
  long double* ld = malloc(sizeof(long double) * N);
  small_ints(ints, N, name, rank);
  for (int i = 0; i < N; ++i) ld[i] = ints[i];
  const test_type ld_type = {MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE", sizeof(long double), TK_LONG_DOUBLE};
  call_args l = {PT_ALLREDUCE, N, NULL, MPI_LONG_DOUBLE, MPI_SUM, MPI_DATATYPE_NULL, 0, comm};
  compare_call(name, &l, ld, N * sizeof(long double), &ld_type, N, 0, EXPECT_SUCCESS);
  free(ld);

  MPI_Op_free(&user_sum);
  free(ints);
  free(counts);
}

void intercomm_cases(void) {
  const int rank = g_test.world_rank, size = g_test.world_size;
  if (size < 2) return;
  MPI_Comm half, inter;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  /* Leaders: world ranks 0 (even half) and 1 (odd half). */
  MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 == 0 ? 1 : 0, 77, &inter);
  MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
  int remote;
  MPI_Comm_remote_size(inter, &remote);
  enum { N = 1001 };
  int* ints = malloc(sizeof(int) * N * (size_t)(remote > 1 ? remote : 1));
  char name[128];

  snprintf(name, sizeof(name), "intercomm/allreduce/MPI_INT/MPI_SUM/n=%d", N);
  small_ints(ints, N, name, rank);
  call_args a = {PT_ALLREDUCE, N, NULL, MPI_INT, MPI_SUM, MPI_DATATYPE_NULL, 0, inter};
  compare_call(name, &a, ints, N * sizeof(int), &kIntType, N, 0, EXPECT_SUCCESS);

  snprintf(name, sizeof(name), "intercomm/allreduce/MPI_DOUBLE/MPI_MAX/n=1");
  double x = rank * 1.5;
  const test_type dbl = {MPI_DOUBLE, "MPI_DOUBLE", sizeof(double), TK_FLOAT};
  call_args b = {PT_ALLREDUCE, 1, NULL, MPI_DOUBLE, MPI_MAX, MPI_DATATYPE_NULL, 0, inter};
  compare_call(name, &b, &x, sizeof(double), &dbl, 1, 0, EXPECT_SUCCESS);

  snprintf(name, sizeof(name), "intercomm/allgather/MPI_INT/n=3");
  small_ints(ints, 3, name, rank);
  call_args g = {PT_ALLGATHER, 3, NULL, MPI_INT, MPI_OP_NULL, MPI_INT, 3, inter};
  compare_call(name, &g, ints, 3 * sizeof(int) * (size_t)remote, &kIntType, 3 * (size_t)remote, 0,
               EXPECT_SUCCESS);

  free(ints);
  MPI_Comm_free(&inter);
  MPI_Comm_free(&half);
}

/* ---------------------------------------------------------------------------------------- */
/* Communicators other than MPI_COMM_WORLD. */

static void cases_on(MPI_Comm comm, const char* comm_name) {
  if (comm == MPI_COMM_NULL) return;
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  reduction_cases_subset(comm, comm_name);
  allgather_cases(comm, comm_name, 0);
}

void communicator_cases(void) {
  const int rank = g_test.world_rank, size = g_test.world_size;
  MPI_Comm dup, split, even, no_zero;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  cases_on(dup, "dup");
  passthrough_cases(dup, "dup");
  error_cases(dup, "dup");

  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &split); /* reversed order */
  cases_on(split, "split");

  MPI_Group world_group, even_group, no_zero_group;
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  int* ranks = malloc(sizeof(int) * (size_t)size);
  int n = 0;
  for (int r = 0; r < size; r += 2) ranks[n++] = r;
  MPI_Group_incl(world_group, n, ranks, &even_group);
  int zero = 0;
  MPI_Group_excl(world_group, 1, &zero, &no_zero_group);
  MPI_Comm_create(MPI_COMM_WORLD, even_group, &even);
  cases_on(even, "create_even");
  if (size > 1) {
    MPI_Comm_create(MPI_COMM_WORLD, no_zero_group, &no_zero);
    cases_on(no_zero, "create_no0");
    if (no_zero != MPI_COMM_NULL) MPI_Comm_free(&no_zero);
  }
  if (even != MPI_COMM_NULL) MPI_Comm_free(&even);
  MPI_Comm_free(&split);
  MPI_Comm_free(&dup);

  /* Create and free again and again: efacoll's per-communicator state must be released. */
  const int loops = g_test.quick ? 10 : 50;
  for (int i = 0; i < loops; ++i) {
    MPI_Comm c = MPI_COMM_NULL;
    const char* kind;
    switch (i % 3) {
      case 0:
        kind = "loop_dup";
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        break;
      case 1:
        kind = "loop_split";
        MPI_Comm_split(MPI_COMM_WORLD, (rank + i) % 2, rank, &c);
        break;
      default:
        kind = "loop_create";
        MPI_Comm_create(MPI_COMM_WORLD, i % 2 ? even_group : no_zero_group, &c);
        break;
    }
    if (c == MPI_COMM_NULL) continue;
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    char name[64];
    snprintf(name, sizeof(name), "%s%d", kind, i);
    run_reduction(RC_ALLREDUCE, find_type(MPI_INT), find_op(MPI_SUM), 1001, c, name, 0, 1);
    if (i % 5 == 0) run_allgather(MPI_DOUBLE, "MPI_DOUBLE", 7, c, name, 0);
    MPI_Comm_free(&c);
  }
  MPI_Group_free(&even_group);
  MPI_Group_free(&no_zero_group);
  MPI_Group_free(&world_group);
  free(ranks);
}

/* When efacoll is active, the regular cases must have run on it: otherwise everything above
 * passes vacuously. */
void engine_counted_check(void) {
  if (!g_test.get_counters) return;
  const char* prov_env = getenv("EFACOLL_PROVIDER");
  const char* enable = getenv("EFACOLL_ENABLE");
  if (prov_env && *prov_env && !(enable && atoi(enable) == 0)) {
    tu_check(g_test.engine_active, "engine_active", "EFACOLL_PROVIDER=%s but efacoll_provider() is NULL",
             prov_env);
  }
  if (!g_test.engine_active) return;
  static const char* const kNames[] = {"allreduce", "allgather", "reduce_scatter"};
  for (int k = 0; k < EFACOLL_NUM_COLLECTIVES; ++k) {
    efacoll_counters c;
    int rc = g_test.get_counters((efacoll_collective)k, &c);
    tu_check(rc == 0 && c.engine_calls > 0, "engine_counted",
             "%s: engine_calls %llu, mpi_calls %llu (rc %d)", kNames[k], c.engine_calls,
             c.mpi_calls, rc);
  }
}

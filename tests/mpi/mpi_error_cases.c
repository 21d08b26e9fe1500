/* Bad input, rank-local: one bad argument at a time on each collective must fail with the class
 * the MPI standard names (the table in mpi_shim/shim_args.cc) and efacoll's message, leave every
 * byte of the send and receive buffers as it was, run nothing and pass nothing to MPI; and the
 * next valid call on the communicator must work. Never compared with PMPI: Open MPI 4.1 crashes
 * on several of these calls. The same calls under MPI_ERRORS_ARE_FATAL: fatal_error_case, run
 * by fatal_errors_test.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_cases.h"
#include "mpi_error_strings.h"

enum { N = 16 }; /* items per rank */

typedef enum {
  BAD_NEGATIVE_COUNT,
  BAD_NEGATIVE_SENDCOUNT,
  BAD_NULL_RECVCOUNTS,
  BAD_NULL_SENDBUF,
  BAD_NULL_RECVBUF,
  BAD_DATATYPE_NULL,
  BAD_RECVTYPE_NULL,
  BAD_UNCOMMITTED,
  BAD_UNCOMMITTED_RECVTYPE,
  BAD_OP_NULL,
  BAD_FLOAT_BAND,
  BAD_BYTE_SUM,
  BAD_COMM_NULL,
  BAD_FREED_COMM,
  BAD_STALE_COMM,
  BAD_SAME_BUFFER,
  BAD_OVERLAP,
  BAD_RECVBUF_IN_PLACE,
  BAD_BOTH_IN_PLACE,
  BAD_IN_PLACE_INTER,
  BAD_COUNT
} bad_input;

static const struct {
  const char* id;
  int error_class;
} kBad[BAD_COUNT] = {
    {"negative-count", MPI_ERR_COUNT},
    {"negative-sendcount", MPI_ERR_COUNT},
    {"null-recvcounts", MPI_ERR_COUNT},
    {"null-sendbuf", MPI_ERR_BUFFER},
    {"null-recvbuf", MPI_ERR_BUFFER},
    {"datatype-null", MPI_ERR_TYPE},
    {"recvtype-null", MPI_ERR_TYPE},
    {"uncommitted", MPI_ERR_TYPE},
    {"uncommitted-recvtype", MPI_ERR_TYPE},
    {"op-null", MPI_ERR_OP},
    {"float-band", MPI_ERR_OP},
    {"byte-sum", MPI_ERR_OP},
    {"comm-null", MPI_ERR_COMM},
    {"freed-comm", MPI_ERR_COMM}, /* the handle MPI_Comm_free left */
    {"stale-comm", MPI_ERR_COMM}, /* a copy of a freed handle, kept elsewhere */
    {"same-buffer", MPI_ERR_BUFFER},
    {"overlap", MPI_ERR_BUFFER},
    {"recvbuf-in-place", MPI_ERR_BUFFER},
    {"both-in-place", MPI_ERR_BUFFER},
    {"in-place-inter", MPI_ERR_BUFFER},
};

static const pt_coll kColls[] = {PT_ALLREDUCE, PT_REDUCE_SCATTER, PT_REDUCE_SCATTER_BLOCK,
                                 PT_ALLGATHER};
static const char* const kCollIds[] = {"allreduce", "reduce_scatter", "reduce_scatter_block",
                                       "allgather"};
static const char* const kCollFunctions[] = {"MPI_Allreduce", "MPI_Reduce_scatter",
                                             "MPI_Reduce_scatter_block", "MPI_Allgather"};

/* Never called: nothing reaches MPI. */
static void no_op(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)in, (void)inout, (void)len, (void)type;
}

typedef struct {
  MPI_Comm comm, freed;
  int rank, size, inter;
  MPI_Datatype loose; /* contiguous(2, MPI_INT), never committed */
  MPI_Op user_op;
  int *counts, *bad_counts;
  unsigned char *arena, *copy; /* the send region, then the receive region */
  size_t region, arena_bytes;
} bad_ctx;

static void ctx_init(bad_ctx* x, MPI_Comm comm) {
  int remote = 0;
  memset(x, 0, sizeof(*x));
  x->comm = comm;
  PMPI_Comm_rank(comm, &x->rank);
  PMPI_Comm_size(comm, &x->size);
  const int size = x->size;
  PMPI_Comm_test_inter(comm, &x->inter);
  if (x->inter) PMPI_Comm_remote_size(comm, &remote);
  MPI_Comm_dup(comm, &x->freed);
  MPI_Comm_free(&x->freed);
  MPI_Type_contiguous(2, MPI_INT, &x->loose);
  MPI_Op_create(no_op, 1, &x->user_op);
  x->counts = malloc(sizeof(int) * (size_t)size);
  x->bad_counts = malloc(sizeof(int) * (size_t)size);
  for (int r = 0; r < size; ++r) {
    x->counts[r] = N;
    x->bad_counts[r] = r == size - 1 ? -1 : N;
  }
  /* Room for N items of up to 8 bytes from every rank of either group. */
  x->region = (size_t)N * 8 * (size_t)(size > remote ? size : remote);
  x->arena_bytes = 2 * x->region;
  x->arena = malloc(x->arena_bytes);
  x->copy = malloc(x->arena_bytes);
}

static void ctx_free(bad_ctx* x) {
  MPI_Type_free(&x->loose);
  MPI_Op_free(&x->user_op);
  free(x->counts);
  free(x->bad_counts);
  free(x->arena);
  free(x->copy);
}

/* Where handles are pointers (Open MPI), a stale copy points at freed memory and efacoll tells it
 * apart (mpi_shim/shim_freed_comms.cc). MPICH's handles are indices into object pools: a freed
 * one MPICH refuses itself until a new communicator takes its value (stale_copy makes none), and
 * efacoll reports that as MPI_ERR_COMM too. Elsewhere (other MPIs) the cases are not run. */
#if (defined(OPEN_MPI) && OPEN_MPI) || defined(MPICH)
enum { kStaleHandlesCaught = 1 };
#else
enum { kStaleHandlesCaught = 0 };
#endif

/* A copy of a handle of `comm`'s group that MPI_Comm_free has released, made just before its use:
 * no new communicator can have taken its value (collective over comm). */
static MPI_Comm stale_copy(MPI_Comm comm) {
  MPI_Comm live, copy;
  MPI_Comm_dup(comm, &live);
  copy = live;
  MPI_Comm_free(&live);
  return copy;
}

/* The call with bad input `b` of collective `c`; 0 if `b` does not apply to it. */
static int build(const bad_ctx* x, int c, bad_input b, call_args* a, const void** send,
                 void** recv) {
  const pt_coll coll = kColls[c];
  const int gather = coll == PT_ALLGATHER;
  const call_args good = {
      coll, N, coll == PT_REDUCE_SCATTER ? x->counts : NULL, MPI_INT, MPI_SUM, MPI_INT, N, x->comm};
  *a = good;
  *send = x->arena;
  *recv = x->arena + x->region;
  if (x->inter != (b == BAD_IN_PLACE_INTER)) return 0;
  switch (b) {
    case BAD_NEGATIVE_COUNT:
      if (gather) {
        a->rcount = -1;
      } else if (coll == PT_REDUCE_SCATTER) {
        a->counts = x->bad_counts;
      } else {
        a->count = -1;
      }
      return 1;
    case BAD_NEGATIVE_SENDCOUNT:
      a->count = -1;
      return gather;
    case BAD_NULL_RECVCOUNTS:
      a->counts = NULL;
      return coll == PT_REDUCE_SCATTER;
    case BAD_NULL_SENDBUF:
      *send = NULL;
      return 1;
    case BAD_NULL_RECVBUF:
      *recv = NULL;
      return 1;
    case BAD_DATATYPE_NULL: /* allgather: the send type */
      a->type = MPI_DATATYPE_NULL;
      return 1;
    case BAD_RECVTYPE_NULL:
      a->rtype = MPI_DATATYPE_NULL;
      return gather;
    case BAD_UNCOMMITTED: /* with a user op: only the type is wrong */
      a->type = x->loose;
      if (gather) a->count = N / 2;
      a->op = x->user_op;
      return 1;
    case BAD_UNCOMMITTED_RECVTYPE: /* Open MPI 4.1 itself accepts this one */
      a->rtype = x->loose;
      a->rcount = N / 2;
      return gather;
    case BAD_OP_NULL:
      a->op = MPI_OP_NULL;
      return !gather;
    case BAD_FLOAT_BAND:
      a->type = MPI_FLOAT;
      a->op = MPI_BAND;
      return !gather;
    case BAD_BYTE_SUM: /* Open MPI 4.1 itself accepts this one */
      a->type = MPI_BYTE;
      return !gather;
    case BAD_COMM_NULL: /* Open MPI 4.1's MPI_Allgather crashes on it */
      a->comm = MPI_COMM_NULL;
      return 1;
    case BAD_FREED_COMM:
      a->comm = x->freed;
      return 1;
    case BAD_STALE_COMM:
      if (!kStaleHandlesCaught) return 0;
      a->comm = stale_copy(x->comm);
      return 1;
    case BAD_SAME_BUFFER:
      *recv = x->arena;
      return 1;
    case BAD_OVERLAP:
      if (gather) {
        /* This rank's own block, without MPI_IN_PLACE. */
        *send = x->arena + x->region + (size_t)x->rank * N * sizeof(int);
      } else {
        *recv = x->arena + sizeof(int);
      }
      return 1;
    case BAD_RECVBUF_IN_PLACE:
      *recv = MPI_IN_PLACE;
      return 1;
    case BAD_BOTH_IN_PLACE:
      *send = MPI_IN_PLACE;
      *recv = MPI_IN_PLACE;
      return 1;
    case BAD_IN_PLACE_INTER:
      *send = MPI_IN_PLACE;
      return 1;
    default:
      return 0;
  }
}

/* One bad call; 1 if it applied (whatever the outcome). */
static int run_bad(bad_ctx* x, int c, bad_input b, const char* comm_name) {
  call_args a;
  const void* send;
  void* recv;
  if (!build(x, c, b, &a, &send, &recv)) return 0;
  char name[256];
  snprintf(name, sizeof(name), "error/%s/%s/%s", comm_name, kCollIds[c], kBad[b].id);
  tu_fill_random(x->arena, x->arena_bytes, tu_seed(name), x->rank);
  memcpy(x->copy, x->arena, x->arena_bytes);
  counter_snapshot before;
  tu_counters(&before);
  const int rc = do_call(0, &a, send, recv);
  char why[512] = "";
  const int counted =
      tu_counted_once(&before, counter_of(kColls[c]), TU_NOT_COUNTED, why, sizeof(why));
  const int cls = error_class(rc);
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  if (rc != MPI_SUCCESS) MPI_Error_string(rc, text, &len);
  if (!tu_check(cls == kBad[b].error_class, name, "error class %d (%s), expected %d", cls,
                tu_error_class_name(cls), kBad[b].error_class)) {
    return 1;
  }
  char prefix[64];
  snprintf(prefix, sizeof(prefix), "efacoll: %s: ", kCollFunctions[c]);
  if (mpi_takes_error_strings()) {
    tu_check(strncmp(text, prefix, strlen(prefix)) == 0, name,
             "error string \"%s\", expected \"%s...\"", text, prefix);
  } else {
    /* The class itself, whose text is MPI's own (not another message of MPI's). */
    char class_text[MPI_MAX_ERROR_STRING] = "";
    MPI_Error_string(cls, class_text, &len);
    tu_check(strcmp(text, class_text) == 0, name, "error string \"%s\", expected MPI's \"%s\"",
             text, class_text);
  }
  size_t changed = 0;
  while (changed < x->arena_bytes && x->arena[changed] == x->copy[changed]) ++changed;
  tu_check(changed == x->arena_bytes, name, "buffer byte %zu changed (send region: %zu bytes)",
           changed, x->region);
  tu_check(counted, name, "%s", why);
  return 1;
}

/* Calls that look like the bad ones but are valid: efacoll must not refuse them. */
static void valid_lookalikes(bad_ctx* x, const char* comm_name) {
  char name[256];
  int* ints = (int*)x->arena;
  tu_fill_random(x->arena, x->arena_bytes, 7, x->rank);

  /* Null buffers with nothing in them. */
  snprintf(name, sizeof(name), "error/%s/allreduce/valid:null-buffers-count-0", comm_name);
  int rc = MPI_Allreduce(NULL, NULL, 0, MPI_INT, MPI_SUM, x->comm);
  tu_check(rc == MPI_SUCCESS, name, "refused: class %d (%s)", error_class(rc),
           tu_error_class_name(error_class(rc)));

  /* Send and receive types that interleave in one array without sharing a byte. */
  MPI_Datatype every_other;
  MPI_Type_vector(N, 1, 2, MPI_INT, &every_other);
  MPI_Type_commit(&every_other);
  snprintf(name, sizeof(name), "error/%s/allreduce/valid:interleaved-vectors", comm_name);
  rc = MPI_Allreduce(ints, ints + 1, 1, every_other, x->user_op, x->comm);
  tu_check(rc == MPI_SUCCESS, name, "refused: class %d (%s)", error_class(rc),
           tu_error_class_name(error_class(rc)));
  MPI_Type_free(&every_other);

  /* MPI_BOTTOM (null in Open MPI) with a type of absolute addresses. */
  MPI_Aint at;
  MPI_Get_address(ints, &at);
  const int block = N;
  MPI_Datatype absolute;
  MPI_Type_create_hindexed(1, &block, &at, MPI_INT, &absolute);
  MPI_Type_commit(&absolute);
  snprintf(name, sizeof(name), "error/%s/allgather/valid:mpi-bottom", comm_name);
  unsigned char* got = x->arena + x->region;
  unsigned char* want = x->copy;
  const size_t bytes = (size_t)N * sizeof(int) * (size_t)x->size;
  rc = MPI_Allgather(MPI_BOTTOM, 1, absolute, got, N, MPI_INT, x->comm);
  const int rc_ref = PMPI_Allgather(ints, N, MPI_INT, want, N, MPI_INT, x->comm);
  if (tu_check(rc == MPI_SUCCESS && rc_ref == MPI_SUCCESS, name, "classes %d (%s), PMPI %d",
               error_class(rc), tu_error_class_name(error_class(rc)), error_class(rc_ref))) {
    tu_check(memcmp(got, want, bytes) == 0, name, "result differs from PMPI's");
  }
  MPI_Type_free(&absolute);
}

/* Stale handles beyond the collectives' own case: freeing one again, and the value of a freed
 * handle that a new communicator took, which is that communicator's handle (MPI cannot tell them
 * apart either). */
static void stale_handles(bad_ctx* x, const char* comm_name) {
  char name[256];
  int rc = MPI_SUCCESS;
  if (kStaleHandlesCaught) {
    snprintf(name, sizeof(name), "error/%s/comm_free/stale-comm", comm_name);
    MPI_Comm stale = stale_copy(x->comm);
    const MPI_Comm before = stale;
    rc = MPI_Comm_free(&stale);
    tu_check(error_class(rc) == MPI_ERR_COMM && stale == before, name,
             "class %d (%s), expected MPI_ERR_COMM with the handle left as it was", error_class(rc),
             tu_error_class_name(error_class(rc)));
  } else if (x->rank == 0) {
    printf("  (stale-comm cases skipped: this MPI's handles are pool indices it reuses)\n");
  }

  /* Open MPI gives the new one A's slot in its Fortran table and, as often as not, B's memory:
   * B's old value at another index than it had. */
  MPI_Comm a, b, taken;
  MPI_Comm_dup(x->comm, &a);
  MPI_Comm_dup(x->comm, &b);
  const MPI_Comm b_value = b;
  MPI_Comm_free(&a);
  MPI_Comm_free(&b);
  MPI_Comm_dup(x->comm, &taken);
  snprintf(name, sizeof(name), "error/%s/allreduce/valid:freed-value-taken-again", comm_name);
  int in = x->rank + 1, out = 0, want = 0;
  rc = MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, taken);
  PMPI_Allreduce(&in, &want, 1, MPI_INT, MPI_SUM, x->comm);
  tu_check(rc == MPI_SUCCESS && out == want, name, "class %d (%s), sum %d, expected %d",
           error_class(rc), tu_error_class_name(error_class(rc)), out, want);
  int reused = taken == b_value, ranks_reusing = 0;
  PMPI_Allreduce(&reused, &ranks_reusing, 1, MPI_INT, MPI_SUM, x->comm);
  if (x->rank == 0) {
    printf("  (%s: a freed value taken by a new communicator on %d of %d ranks)\n", comm_name,
           ranks_reusing, x->size);
  }
  MPI_Comm_free(&taken);
}

void error_cases(MPI_Comm comm, const char* comm_name) {
  if (!g_test.engine_active) {
    /* Without efacoll, MPI judges alone, and Open MPI 4.1 crashes on some of these calls. */
    if (g_test.world_rank == 0) printf("  (bad-input cases skipped: efacoll is inactive)\n");
    return;
  }
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  bad_ctx x;
  ctx_init(&x, comm);
  valid_lookalikes(&x, comm_name);
  stale_handles(&x, comm_name);
  for (int c = 0; c < 4; ++c) {
    for (int b = 0; b < BAD_COUNT; ++b) {
      if (!run_bad(&x, c, (bad_input)b, comm_name)) continue;
      /* The next valid call on the communicator works. */
      if (kColls[c] == PT_ALLGATHER) {
        run_allgather(MPI_INT, "MPI_INT", 1001, comm, comm_name, 0);
      } else {
        run_reduction((red_coll)kColls[c], find_type(MPI_INT), find_op(MPI_SUM), 1001, comm,
                      comm_name, 0, 1);
      }
    }
  }
  ctx_free(&x);
}

void intercomm_error_cases(void) {
  const int rank = g_test.world_rank;
  if (!g_test.engine_active || g_test.world_size < 2) return;
  MPI_Comm half, inter;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 == 0 ? 1 : 0, 78, &inter);
  MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
  bad_ctx x;
  ctx_init(&x, inter);
  for (int c = 0; c < 4; ++c) {
    run_bad(&x, c, BAD_IN_PLACE_INTER, "intercomm");
    /* The next valid call on the inter-communicator works (MPI_Allreduce after a
     * reduce-scatter: the groups' sizes differ, so their recvcounts would have to as well). */
    call_args a;
    const void* send;
    void* recv;
    build(&x, kColls[c] == PT_ALLGATHER ? c : 0, BAD_IN_PLACE_INTER, &a, &send, &recv);
    const int rc = do_call(0, &a, x.arena, x.arena + x.region);
    char name[128];
    snprintf(name, sizeof(name), "error/intercomm/%s/valid-after", kCollIds[c]);
    tu_check(rc == MPI_SUCCESS, name, "returned class %d (%s)", error_class(rc),
             tu_error_class_name(error_class(rc)));
  }
  ctx_free(&x);
  MPI_Comm_free(&inter);
  MPI_Comm_free(&half);
}

int fatal_error_case(const char* spec) {
  const char* colon = strchr(spec, ':');
  int c = -1, b = -1;
  for (int i = 0; colon && i < 4; ++i) {
    if (strlen(kCollIds[i]) == (size_t)(colon - spec) && !strncmp(spec, kCollIds[i], colon - spec))
      c = i;
  }
  for (int i = 0; colon && i < BAD_COUNT; ++i) {
    if (!strcmp(colon + 1, kBad[i].id)) b = i;
  }
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  bad_ctx x;
  ctx_init(&x, comm);
  call_args a;
  const void* send;
  void* recv;
  if (c < 0 || b < 0 || !build(&x, c, (bad_input)b, &a, &send, &recv)) {
    if (g_test.world_rank == 0) printf("fatal mode: no such case \"%s\"\n", spec);
    return 2;
  }
  /* Errors on MPI_COMM_NULL and stale handles are raised on MPI_COMM_WORLD. */
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_ARE_FATAL);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  if (g_test.world_rank == 0) {
    printf("fatal mode: %s with MPI_ERRORS_ARE_FATAL\n", spec);
    fflush(stdout);
  }
  const int rc = do_call(0, &a, send, recv);
  printf("FAIL fatal/%s rank %d: the call returned %d instead of aborting\n", spec,
         g_test.world_rank, rc);
  fflush(stdout);
  return 3;
}

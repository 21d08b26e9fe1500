#include "random_call.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_memory.h"

static const char* const kKindNames[RK_KINDS] = {"allreduce", "allgather", "reduce_scatter",
                                                 "reduce_scatter_block"};

void rk_draw(uint64_t h, int comm_size, size_t max_bytes, rk_call* c) {
  int ntypes = 0, nops = 0;
  const test_type* types = reduction_types(&ntypes);
  const test_op* ops = reduction_ops(&nops);
  c->kind = (rk_kind)(h % RK_KINDS);
  uint64_t r = tu_hash(h, 1, 0);
  do {
    c->type = &types[r % (uint64_t)ntypes];
    c->op = &ops[(r >> 20) % (uint64_t)nops];
    r = tu_hash(r, 2, 0);
  } while (!pair_allowed(c->type, c->op));
  c->inplace = (h >> 40) % 3 == 0;
  c->nonblocking = (h >> 44) % 3 == 0;
  c->seed = tu_hash(h, 4, 0);
  c->send_memory = c->recv_memory = RK_HOST;

  r = tu_hash(h, 3, 0);
  size_t bytes = 0;
  if (r % 50 != 0 && max_bytes > 0) {
    double u = (double)(r >> 11) * 0x1p-53; /* [0, 1) */
    bytes = (size_t)exp2(u * log2((double)max_bytes + 1));
  }
  size_t elems = bytes / c->type->size;
  if (c->kind == RK_ALLGATHER || c->kind == RK_REDUCE_SCATTER_BLOCK) elems /= (size_t)comm_size;
  c->count = (int)elems;
}

int rk_gpu_ready(void) {
  MPI_Comm node;
  int rank = 0, local = 0, mine, all = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  char why[256] = "";
  mine = gm_open(local, why, sizeof(why)) == 0;
  PMPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!mine) printf("SKIP: no GPU (rank %d: %s)\n", rank, why);
  fflush(stdout);
  return all;
}

static rk_memory gpu_memory_of(uint64_t r) {
  return r % 8 < 5 ? RK_DEVICE : r % 8 < 7 ? RK_MANAGED : RK_HOST;
}

void rk_draw_gpu_memory(uint64_t h, rk_call* c) {
  const uint64_t r = tu_hash(h, 5, 0);
  c->send_memory = gpu_memory_of(r);
  c->recv_memory = gpu_memory_of(r >> 8);
  if (c->recv_memory == RK_HOST && (c->inplace || c->send_memory == RK_HOST))
    c->recv_memory = RK_DEVICE;
}

void rk_describe(const rk_call* c, char* out, size_t n) {
  static const char* const memory[RK_MEMORY_KINDS] = {"host", "device", "managed"};
  char where[64] = "";
  if (c->send_memory != RK_HOST || c->recv_memory != RK_HOST) {
    snprintf(where, sizeof(where), ", %s%s%s memory", c->inplace ? "" : memory[c->send_memory],
             c->inplace ? "" : " -> ", memory[c->recv_memory]);
  }
  snprintf(out, n, "%s%s %s %s count %d%s%s", c->nonblocking ? "nonblocking " : "",
           kKindNames[c->kind], c->type->name, c->kind == RK_ALLGATHER ? "-" : c->op->name,
           c->count, c->inplace ? " in place" : "", where);
}

/* Where a call's data lives, in elements. */
typedef struct {
  size_t send;   /* the send buffer (in place: the input in the receive buffer) */
  size_t buf;    /* the receive buffer */
  size_t result; /* the result, from the receive buffer's start */
} extents;

static extents extents_of(const rk_call* c, int rank, int size, const int* counts) {
  extents e;
  const size_t n = (size_t)c->count, p = (size_t)size;
  switch (c->kind) {
    case RK_ALLREDUCE:
      e.send = e.buf = e.result = n;
      break;
    case RK_ALLGATHER:
      e.send = n;
      e.buf = e.result = n * p;
      break;
    case RK_REDUCE_SCATTER:
      e.send = n;
      e.result = (size_t)counts[rank];
      e.buf = c->inplace ? n : e.result;
      break;
    default:
      e.send = n * p;
      e.result = n;
      e.buf = c->inplace ? n * p : n;
      break;
  }
  return e;
}

/* The nonblocking form of the call, then MPI_Wait. */
static int call_nonblocking(const rk_call* c, const void* send, void* recv, const int* counts,
                            MPI_Comm comm) {
  MPI_Datatype t = c->type->type;
  MPI_Op op = c->op->op;
  MPI_Request request = MPI_REQUEST_NULL;
  int rc;
  switch (c->kind) {
    case RK_ALLREDUCE:
      rc = MPI_Iallreduce(send, recv, c->count, t, op, comm, &request);
      break;
    case RK_ALLGATHER:
      rc = MPI_Iallgather(send, c->count, t, recv, c->count, t, comm, &request);
      break;
    case RK_REDUCE_SCATTER:
      rc = MPI_Ireduce_scatter(send, recv, counts, t, op, comm, &request);
      break;
    default:
      rc = MPI_Ireduce_scatter_block(send, recv, c->count, t, op, comm, &request);
  }
  return rc == MPI_SUCCESS ? MPI_Wait(&request, MPI_STATUS_IGNORE) : rc;
}

static int call(int pmpi, const rk_call* c, const void* send, void* recv, const int* counts,
                MPI_Comm comm) {
  MPI_Datatype t = c->type->type;
  MPI_Op op = c->op->op;
  if (!pmpi && c->nonblocking) return call_nonblocking(c, send, recv, counts, comm);
  switch (c->kind) {
    case RK_ALLREDUCE:
      return pmpi ? PMPI_Allreduce(send, recv, c->count, t, op, comm)
                  : MPI_Allreduce(send, recv, c->count, t, op, comm);
    case RK_ALLGATHER:
      return pmpi ? PMPI_Allgather(send, c->count, t, recv, c->count, t, comm)
                  : MPI_Allgather(send, c->count, t, recv, c->count, t, comm);
    case RK_REDUCE_SCATTER:
      return pmpi ? PMPI_Reduce_scatter(send, recv, counts, t, op, comm)
                  : MPI_Reduce_scatter(send, recv, counts, t, op, comm);
    default:
      return pmpi ? PMPI_Reduce_scatter_block(send, recv, c->count, t, op, comm)
                  : MPI_Reduce_scatter_block(send, recv, c->count, t, op, comm);
  }
}

/* Never NULL, exactly `bytes` long otherwise: a sanitizer sees any overrun. */
static unsigned char* alloc(size_t bytes) {
  unsigned char* p = malloc(bytes ? bytes : 1);
  if (!p) {
    fprintf(stderr, "out of memory (%zu bytes)\n", bytes);
    abort();
  }
  return p;
}

/* MPI_X's buffer: the host one itself, or a GPU copy of it. */
static void* place(rk_memory memory, void* host, size_t bytes) {
  if (memory == RK_HOST) return host;
  void* p = gm_alloc(bytes, memory == RK_MANAGED);
  gm_copy(p, host, bytes);
  return p;
}

/* The GPU copy's content back into the host buffer, where the checks read it. */
static void bring_back(rk_memory memory, void* host, void* placed, size_t bytes) {
  if (memory == RK_HOST) return;
  gm_copy(host, placed, bytes);
  gm_free(placed);
}

int rk_run(const rk_call* c, MPI_Comm comm, char* why, size_t n) {
  int rank = 0, size = 0;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Comm_size(comm, &size);
  int* counts = malloc(sizeof(int) * (size_t)size);
  if (c->kind == RK_REDUCE_SCATTER) reduction_split_counts(c->count, size, counts);
  const extents e = extents_of(c, rank, size, counts);
  const size_t tsize = c->type->size;

  /* Two copies of every input: one for efacoll, one for PMPI. */
  unsigned char* input = alloc(e.send * tsize);
  reduction_fill(c->type, c->op->op, input, e.send, c->seed, rank);
  unsigned char* send = alloc(e.send * tsize);
  memcpy(send, input, e.send * tsize);
  unsigned char* got = alloc(e.buf * tsize);
  unsigned char* want = alloc(e.buf * tsize);
  memset(got, TU_SENTINEL, e.buf * tsize);
  memset(want, TU_SENTINEL, e.buf * tsize);
  const void* send_ref = input;
  if (c->inplace) {
    send_ref = MPI_IN_PLACE;
    const size_t at = c->kind == RK_ALLGATHER ? (size_t)rank * e.send * tsize : 0;
    memcpy(got + at, input, e.send * tsize);
    memcpy(want + at, input, e.send * tsize);
  }

  const rk_memory send_memory = c->inplace ? RK_HOST : c->send_memory; /* unused in place */
  void* send_placed = place(send_memory, send, e.send * tsize);
  void* got_placed = place(c->recv_memory, got, e.buf * tsize);
  int rc = call(0, c, c->inplace ? MPI_IN_PLACE : send_placed, got_placed, counts, comm);
  bring_back(send_memory, send, send_placed, e.send * tsize);
  bring_back(c->recv_memory, got, got_placed, e.buf * tsize);
  int rc_ref = call(1, c, send_ref, want, counts, comm);
  int outcome = RK_OK;
  char what[192];
  rk_describe(c, what, sizeof(what));
  if (rc != MPI_SUCCESS || rc_ref != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    PMPI_Error_string(rc != MPI_SUCCESS ? rc : rc_ref, text, &len);
    snprintf(why, n, "%s: MPI returned %d, PMPI %d: %s", what, rc, rc_ref, text);
    outcome = RK_ERROR;
  } else if (!c->inplace && memcmp(send, input, e.send * tsize) != 0) {
    snprintf(why, n, "%s: the send buffer was written", what);
    outcome = RK_MISMATCH;
  } else {
    long bad = tu_first_mismatch(c->type, got, want, e.result);
    if (bad >= 0) {
      char a[64], b[64];
      tu_format_elem(c->type, got, (size_t)bad, a, sizeof(a));
      tu_format_elem(c->type, want, (size_t)bad, b, sizeof(b));
      snprintf(why, n, "%s: first mismatch at element %ld of %zu: efacoll %s, PMPI %s", what, bad,
               e.result, a, b);
      outcome = RK_MISMATCH;
    }
  }
  free(want);
  free(got);
  free(send);
  free(input);
  free(counts);
  return outcome;
}

void rk_run_counted(const rk_call* c, MPI_Comm comm, const char* who, rk_tally* tally,
                    long max_reports) {
  char why[512];
  int outcome = rk_run(c, comm, why, sizeof(why));
  tally->calls++;
  if (outcome == RK_OK) return;
  long failures = tally->mismatches + tally->errors;
  if (outcome == RK_MISMATCH) tally->mismatches++;
  if (outcome == RK_ERROR) tally->errors++;
  if (failures < max_reports) {
    printf("FAIL %s call %ld: %s\n", who, tally->calls, why);
    fflush(stdout);
  }
}

/* Whether a libfabric provider delivers two multi-packet tagged messages from one peer when they
 * arrive in the other order than their receives were posted; plain libfabric, no efacoll (MPI
 * only exchanges the addresses). The pattern is a recursive-doubling allgather of one message per
 * block on 4 ranks: step 1 swaps blocks with rank ^ 1, step 2 sends the own block at once and the
 * block from step 1 once it is in, to rank ^ 2. "in-order" posts step 2's two receives in the
 * order that peer sends; "reversed" the other way round. udp;ofi_rxd 1.17 fails the latter
 * (docs/architecture.md). Not run by ctest: it checks a provider, not efacoll.
 * Usage: mpirun -np 4 efacoll_receive_order_probe PROVIDER in-order|reversed [BYTES] [CALLS]
 * Exit 0: every call delivered every block; 1: a stall (10 s), a CQ error or wrong data. */
#include <mpi.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct fid_ep* ep;
static struct fid_cq* cq;
static int rank;

static void fail(const char* what, int call) {
  fprintf(stderr, "rank %d, call %d: %s\n", rank, call, what);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static void ok_or_fail(int rc, const char* what) {
  if (rc) fail(what, -1);
}

typedef struct {
  struct fi_context2 ctx; /* first: the CQ entry's context points here */
  int done;
} Op;

static int read_cq(int call) {
  struct fi_cq_tagged_entry e[16];
  ssize_t n = fi_cq_read(cq, e, 16);
  if (n == -FI_EAGAIN) return 0;
  if (n < 0) fail("a CQ error", call);
  for (ssize_t i = 0; i < n; ++i) ((Op*)e[i].op_context)->done = 1;
  return (int)n;
}

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static void wait_for(Op* ops, int count, int call) {
  const double start = seconds();
  for (int i = 0; i < count;) {
    if (ops[i].done) {
      ++i;
    } else if (!read_cq(call)) {
      sched_yield(); /* ranks share cores */
      if (seconds() - start > 10) fail("stalled", call);
    }
  }
}

/* The message of `block` sent by `sender` in `step` of call `call`. */
static uint64_t tag_of(int call, int step, int sender, int block) {
  return ((uint64_t)(call & 0xffff) << 32) | ((uint64_t)step << 16) | ((uint64_t)sender << 8) |
         (uint64_t)block;
}

#define POST(expr, call)                                \
  do {                                                  \
    ssize_t rc_;                                        \
    while ((rc_ = (expr)) == -FI_EAGAIN) read_cq(call); \
    if (rc_) fail("posting", call);                     \
  } while (0)

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int nranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  if (nranks != 4 || argc < 3) {
    if (rank == 0) fprintf(stderr, "usage: 4 ranks, PROVIDER in-order|reversed [BYTES] [CALLS]\n");
    MPI_Finalize();
    return 2;
  }
  const int reversed = strcmp(argv[2], "reversed") == 0;
  const size_t bytes = argc > 3 ? strtoull(argv[3], 0, 10) : 4096;
  const int calls = argc > 4 ? atoi(argv[4]) : 5000;

  struct fi_info* hints = fi_allocinfo();
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_TAGGED | FI_MSG;
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  hints->domain_attr->mr_mode = 0;
  hints->fabric_attr->prov_name = strdup(argv[1]);
  struct fi_info* info;
  struct fid_fabric* fabric;
  struct fid_domain* domain;
  struct fid_av* av;
  ok_or_fail(fi_getinfo(FI_VERSION(1, 10), NULL, NULL, 0, hints, &info), "fi_getinfo");
  ok_or_fail(fi_fabric(info->fabric_attr, &fabric, NULL), "fi_fabric");
  ok_or_fail(fi_domain(fabric, info, &domain, NULL), "fi_domain");
  struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED, .size = 1024};
  ok_or_fail(fi_cq_open(domain, &cq_attr, &cq, NULL), "fi_cq_open");
  struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
  ok_or_fail(fi_av_open(domain, &av_attr, &av, NULL), "fi_av_open");
  ok_or_fail(fi_endpoint(domain, info, &ep, NULL), "fi_endpoint");
  ok_or_fail(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind(cq)");
  ok_or_fail(fi_ep_bind(ep, &av->fid, 0), "fi_ep_bind(av)");
  ok_or_fail(fi_enable(ep), "fi_enable");
  char name[256], names[4 * 256];
  size_t name_len = sizeof(name);
  ok_or_fail(fi_getname(&ep->fid, name, &name_len), "fi_getname");
  MPI_Allgather(name, (int)name_len, MPI_BYTE, names, (int)name_len, MPI_BYTE, MPI_COMM_WORLD);
  fi_addr_t addr[4];
  if (fi_av_insert(av, names, 4, addr, 0, NULL) != 4) fail("fi_av_insert", -1);

  char* buf = malloc(bytes * 4);
  const int p1 = rank ^ 1, p2 = rank ^ 2;
  /* The step-2 peer sends its own block first, then the one it got from its step-1 peer. */
  const int first = reversed ? p2 ^ 1 : p2, second = reversed ? p2 : p2 ^ 1;
  for (int call = 0; call < calls; ++call) {
    Op op[6];
    memset(op, 0, sizeof(op));
    memset(buf, 0, bytes * 4);
    memset(buf + rank * bytes, (char)(rank + call), bytes);
    POST(fi_tsend(ep, buf + rank * bytes, bytes, NULL, addr[p1], tag_of(call, 1, rank, rank),
                  &op[0].ctx),
         call);
    POST(fi_trecv(ep, buf + p1 * bytes, bytes, NULL, FI_ADDR_UNSPEC, tag_of(call, 1, p1, p1), 0,
                  &op[1].ctx),
         call);
    POST(fi_tsend(ep, buf + rank * bytes, bytes, NULL, addr[p2], tag_of(call, 2, rank, rank),
                  &op[2].ctx),
         call);
    POST(fi_trecv(ep, buf + first * bytes, bytes, NULL, FI_ADDR_UNSPEC, tag_of(call, 2, p2, first),
                  0, &op[3].ctx),
         call);
    POST(fi_trecv(ep, buf + second * bytes, bytes, NULL, FI_ADDR_UNSPEC,
                  tag_of(call, 2, p2, second), 0, &op[4].ctx),
         call);
    wait_for(&op[1], 1, call);
    POST(fi_tsend(ep, buf + p1 * bytes, bytes, NULL, addr[p2], tag_of(call, 2, rank, p1),
                  &op[5].ctx),
         call);
    wait_for(op, 6, call);
    for (int b = 0; b < 4; ++b) {
      for (size_t i = 0; i < bytes; ++i) {
        if (buf[b * bytes + i] != (char)(b + call)) fail("wrong data", call);
      }
    }
  }
  if (rank == 0)
    printf("%s, %s: %d calls of %zu B blocks delivered\n", argv[1], argv[2], calls, bytes);
  MPI_Barrier(MPI_COMM_WORLD); /* a manual-progress provider needs the peers until all are done */
  fi_close(&ep->fid);
  fi_close(&av->fid);
  fi_close(&cq->fid);
  fi_close(&domain->fid);
  fi_close(&fabric->fid);
  fi_freeinfo(info);
  fi_freeinfo(hints);
  free(buf);
  MPI_Finalize();
  return 0;
}

/* Whether a libfabric provider delivers a peer's multi-packet tagged messages when they arrive in
 * another order than their receives were posted; plain libfabric, no efacoll (MPI only exchanges
 * the addresses). The pattern is a recursive-doubling allgather on a power of two of ranks, each
 * block cut into chunks: in step s a rank sends the blocks it holds, in the order they reached it,
 * to rank ^ 2^(s-1), each chunk once it is in. Every receive is posted at the start of a call.
 *   in-order  each peer's receives in the order it lists its sends, which it posts in that order
 *   reversed  each step's receives the other way round (sends as in-order)
 *   as-ready  receives as in-order, each send posted as soon as its chunk is in, so that chunks
 *             of blocks from different peers go out interleaved
 * udp;ofi_rxd 1.17 fails the latter two (docs/decisions/0027-udp-posts-each-peers-operations-in-schedule-order.md). Not run by ctest: it checks a
 * provider, not efacoll.
 * Usage: mpirun -np 4 efacoll_receive_order_probe PROVIDER in-order|reversed|as-ready
 *        [BLOCK_BYTES (4096)] [CALLS (5000)] [CHUNK_BYTES (the block)]
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
  int posted, done;
  int step, block, chunk; /* what it carries */
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

/* The blocks rank r holds after `steps` steps, in the order they reached it. */
static int held_blocks(int r, int steps, int* out) {
  if (steps == 0) {
    out[0] = r;
    return 1;
  }
  const int before = held_blocks(r, steps - 1, out);
  return before + held_blocks(r ^ (1 << (steps - 1)), steps - 1, out + before);
}

/* The message of chunk `chunk` of `block`, sent in `step` of call `call`, by `sender`. */
static uint64_t tag_of(int call, int step, int sender, int block, int chunk) {
  return ((uint64_t)(call & 0xffff) << 44) | ((uint64_t)step << 40) | ((uint64_t)sender << 28) |
         ((uint64_t)block << 16) | (uint64_t)chunk;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int nranks, steps = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  while ((1 << steps) < nranks) ++steps;
  const char* order = argc > 2 ? argv[2] : "";
  const int reversed = !strcmp(order, "reversed"), as_ready = !strcmp(order, "as-ready");
  if ((1 << steps) != nranks || nranks > 256 || argc < 3 ||
      !(reversed || as_ready || !strcmp(order, "in-order"))) {
    if (rank == 0)
      fprintf(stderr,
              "usage: a power of two of ranks, PROVIDER in-order|reversed|as-ready "
              "[BLOCK_BYTES] [CALLS] [CHUNK_BYTES]\n");
    MPI_Finalize();
    return 2;
  }
  const size_t bytes = argc > 3 ? strtoull(argv[3], 0, 10) : 4096;
  const int calls = argc > 4 ? atoi(argv[4]) : 5000;
  const size_t chunk = argc > 5 ? strtoull(argv[5], 0, 10) : bytes;
  const int chunks = (int)((bytes + chunk - 1) / chunk);
  if (bytes == 0 || chunk == 0 || chunks > 0xffff) fail("bad sizes", -1);

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
  struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED, .size = 4096};
  ok_or_fail(fi_cq_open(domain, &cq_attr, &cq, NULL), "fi_cq_open");
  struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
  ok_or_fail(fi_av_open(domain, &av_attr, &av, NULL), "fi_av_open");
  ok_or_fail(fi_endpoint(domain, info, &ep, NULL), "fi_endpoint");
  ok_or_fail(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind(cq)");
  ok_or_fail(fi_ep_bind(ep, &av->fid, 0), "fi_ep_bind(av)");
  ok_or_fail(fi_enable(ep), "fi_enable");
  char name[256];
  size_t name_len = sizeof(name);
  ok_or_fail(fi_getname(&ep->fid, name, &name_len), "fi_getname");
  char* names = malloc(name_len * nranks);
  MPI_Allgather(name, (int)name_len, MPI_BYTE, names, (int)name_len, MPI_BYTE, MPI_COMM_WORLD);
  fi_addr_t* addr = malloc(sizeof(fi_addr_t) * nranks);
  if (fi_av_insert(av, names, nranks, addr, 0, NULL) != nranks) fail("fi_av_insert", -1);

  char* buf = malloc(bytes * nranks);
  const size_t ops_per_side = (size_t)(nranks - 1) * chunks;
  Op* recvs = malloc(sizeof(Op) * ops_per_side);
  Op* sends = malloc(sizeof(Op) * ops_per_side);
  Op** recv_of = malloc(sizeof(Op*) * nranks * chunks); /* (block, chunk) -> its receive */
  int* blocks = malloc(sizeof(int) * nranks);
  for (int call = 0; call < calls; ++call) {
    memset(buf, 0, bytes * nranks);
    memset(buf + rank * bytes, (char)(rank + call), bytes);
    memset(recvs, 0, sizeof(Op) * ops_per_side);
    memset(sends, 0, sizeof(Op) * ops_per_side);
    size_t nrecv = 0, nsend = 0;
    const double start = seconds();
    for (int s = 1; s <= steps; ++s) {
      const int peer = rank ^ (1 << (s - 1));
      const int held = held_blocks(peer, s - 1, blocks);
      for (int i = 0; i < held * chunks; ++i) {
        const int k = reversed ? held * chunks - 1 - i : i;
        Op* o = &recvs[nrecv++];
        o->step = s;
        o->block = blocks[k / chunks];
        o->chunk = k % chunks;
        recv_of[o->block * chunks + o->chunk] = o;
        const size_t off = (size_t)o->chunk * chunk,
                     len = off + chunk > bytes ? bytes - off : chunk;
        ssize_t rc;
        while ((rc = fi_trecv(ep, buf + o->block * bytes + off, len, NULL, FI_ADDR_UNSPEC,
                              tag_of(call, s, peer, o->block, o->chunk), 0, &o->ctx)) ==
               -FI_EAGAIN) {
          /* Every receive is posted before the first send: a queue too small for them stalls. */
          if (!read_cq(call) && seconds() - start > 10) fail("stalled posting receives", call);
        }
        if (rc) fail("posting a receive", call);
      }
      const int mine = held_blocks(rank, s - 1, blocks);
      for (int i = 0; i < mine * chunks; ++i) {
        Op* o = &sends[nsend++];
        o->step = s;
        o->block = blocks[i / chunks];
        o->chunk = i % chunks;
      }
    }
    for (size_t left = nrecv + nsend; left;) {
      int moved = 0, blocked_step = 0;
      for (size_t i = 0; i < nsend; ++i) {
        Op* o = &sends[i];
        if (o->posted || o->step == blocked_step) continue;
        if (o->block != rank && !recv_of[o->block * chunks + o->chunk]->done) {
          if (!as_ready) blocked_step = o->step; /* this peer's later sends wait behind it */
          continue;
        }
        const size_t off = (size_t)o->chunk * chunk,
                     len = off + chunk > bytes ? bytes - off : chunk;
        const ssize_t rc =
            fi_tsend(ep, buf + o->block * bytes + off, len, NULL, addr[rank ^ (1 << (o->step - 1))],
                     tag_of(call, o->step, rank, o->block, o->chunk), &o->ctx);
        if (rc == -FI_EAGAIN) break;
        if (rc) fail("posting a send", call);
        o->posted = moved = 1;
      }
      moved |= read_cq(call);
      left = 0;
      for (size_t i = 0; i < nrecv; ++i) left += !recvs[i].done;
      for (size_t i = 0; i < nsend; ++i) left += !sends[i].done;
      if (!moved) {
        sched_yield(); /* ranks share cores */
        if (seconds() - start > 10) fail("stalled", call);
      }
    }
    for (int b = 0; b < nranks; ++b) {
      for (size_t i = 0; i < bytes; ++i) {
        if (buf[b * bytes + i] != (char)(b + call)) fail("wrong data", call);
      }
    }
  }
  if (rank == 0)
    printf("%s, %d ranks, %s: %d calls of %zu B blocks in %d chunks delivered\n", argv[1], nranks,
           order, calls, bytes, chunks);
  MPI_Barrier(MPI_COMM_WORLD); /* a manual-progress provider needs the peers until all are done */
  fi_close(&ep->fid);
  fi_close(&av->fid);
  fi_close(&cq->fid);
  fi_close(&domain->fid);
  fi_close(&fabric->fid);
  fi_freeinfo(info);
  fi_freeinfo(hints);
  free(buf);
  free(recvs);
  free(sends);
  free(recv_of);
  free(blocks);
  free(names);
  free(addr);
  MPI_Finalize();
  return 0;
}

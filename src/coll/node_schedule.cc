#include "coll/node_schedule.h"

#include <algorithm>

#include "coll/ring_layout.h"

namespace efacoll {
namespace {

NodeRef at(int rank, NodeSpace space, size_t offset) {
  NodeRef r;
  r.rank = rank;
  r.space = space;
  r.offset = offset;
  return r;
}

NodeOp copy(NodeRef dst, NodeRef src, size_t bytes) {
  NodeOp op;
  op.kind = NodeOp::Kind::kCopy;
  op.dst = dst;
  op.srcs = {src};
  op.bytes = bytes;
  return op;
}

NodeOp reduce(NodeRef dst, std::vector<NodeRef> srcs, size_t bytes) {
  NodeOp op;
  op.kind = NodeOp::Kind::kReduce;
  op.dst = dst;
  op.srcs = std::move(srcs);
  op.bytes = bytes;
  return op;
}

// Where rank r's input lies: in place, its receive buffer (allgather: its own block there).
NodeRef input(const NodeCall& c, int r, size_t offset) {
  if (!c.inplace) return at(r, NodeSpace::kSend, offset);
  const size_t own = c.kind == CollKind::kAllgather ? r * c.count * c.elem_size : 0;
  return at(r, NodeSpace::kRecv, own + offset);
}

size_t blocks_before(const NodeCall& c, int r) {
  size_t n = 0;
  for (int p = 0; p < r; ++p) n += c.blocks[p];
  return n;
}

}  // namespace

std::vector<NodePhase> ipc_rounds_schedule(const NodeCall& c) {
  const size_t e = c.elem_size, me = static_cast<size_t>(c.rank);
  std::vector<NodePhase> phases;
  auto phase = [&phases]() -> NodePhase& { return phases.emplace_back(); };
  // dst = fold over ranks of their workspace inputs at `off`, rank 0's first.
  auto reduce_all = [&](NodeRef dst, size_t off, size_t bytes) {
    std::vector<NodeRef> srcs;
    for (int p = 0; p < c.nranks; ++p) srcs.push_back(at(p, NodeSpace::kWsIn, off));
    return reduce(dst, std::move(srcs), bytes);
  };
  if (c.kind == CollKind::kAllgather) {
    const size_t block = c.count * e;
    for (size_t off = 0; off < block; off += c.half) {
      const size_t n = std::min(c.half, block - off);
      phase().ops.push_back(copy(at(c.rank, NodeSpace::kWsIn, 0), input(c, c.rank, off), n));
      NodePhase& out = phase();
      for (int p = 0; p < c.nranks; ++p)
        out.ops.push_back(
            copy(at(c.rank, NodeSpace::kRecv, p * block + off), at(p, NodeSpace::kWsIn, 0), n));
    }
    return phases;
  }
  const size_t round = std::max<size_t>(1, c.half / e);  // elements a round
  if (c.kind == CollKind::kReduceScatter) {
    size_t total = 0;
    for (size_t b : c.blocks) total += b;
    const size_t mine_begin = blocks_before(c, c.rank), mine_end = mine_begin + c.blocks[me];
    for (size_t off = 0; off < total; off += round) {
      const size_t n = std::min(round, total - off);
      phase().ops.push_back(
          copy(at(c.rank, NodeSpace::kWsIn, 0), input(c, c.rank, off * e), n * e));
      NodePhase& fold = phase();
      // In place, the output (the start of recv) never reaches input not yet copied in.
      const size_t x0 = std::max(off, mine_begin), x1 = std::min(off + n, mine_end);
      if (x0 < x1) {
        fold.ops.push_back(reduce_all(at(c.rank, NodeSpace::kRecv, (x0 - mine_begin) * e),
                                      (x0 - off) * e, (x1 - x0) * e));
      }
    }
    return phases;
  }
  // Allreduce: each rank reduces one slice of every round into its output half; all gather it.
  // A round's gathering shares its phase with the next round's copying in (other memory).
  for (size_t off = 0; off < c.count; off += round) {
    const size_t n = std::min(round, c.count - off);
    if (off == 0) phase();
    phases.back().ops.push_back(
        copy(at(c.rank, NodeSpace::kWsIn, 0), input(c, c.rank, off * e), n * e));
    size_t begin, len;
    even_slice(n, c.nranks, c.rank, &begin, &len);
    NodePhase& fold = phase();
    if (len) {
      fold.ops.push_back(reduce_all(at(c.rank, NodeSpace::kWsOut, begin * e), begin * e, len * e));
    }
    NodePhase& gather = phase();
    for (int p = 0; p < c.nranks; ++p) {
      even_slice(n, c.nranks, p, &begin, &len);
      if (len) {
        gather.ops.push_back(copy(at(c.rank, NodeSpace::kRecv, (off + begin) * e),
                                  at(p, NodeSpace::kWsOut, begin * e), len * e));
      }
    }
  }
  if (!phases.empty()) phases.back().barrier_after = false;
  return phases;
}

std::vector<NodePhase> ipc_direct_schedule(const NodeCall& c) {
  const size_t e = c.elem_size;
  std::vector<NodePhase> phases(1);
  std::vector<NodeOp>& ops = phases[0].ops;
  // Own input first: in place, dst aliases it and must be read before it is overwritten.
  auto fold = [&](NodeRef dst, size_t at_byte, size_t bytes) {
    std::vector<NodeRef> srcs;
    for (int k = 0; k < c.nranks; ++k) srcs.push_back(input(c, (c.rank + k) % c.nranks, at_byte));
    ops.push_back(reduce(dst, std::move(srcs), bytes));
  };
  switch (c.kind) {
    case CollKind::kAllreduce: {
      size_t begin, len;
      even_slice(c.count, c.nranks, c.rank, &begin, &len);
      if (!len) break;
      const size_t off = begin * e, bytes = len * e;
      fold(at(c.rank, NodeSpace::kRecv, off), off, bytes);
      for (int p = 0; p < c.nranks; ++p)
        if (p != c.rank)
          ops.push_back(
              copy(at(p, NodeSpace::kRecv, off), at(c.rank, NodeSpace::kRecv, off), bytes));
      break;
    }
    case CollKind::kAllgather: {
      const size_t block = c.count * e;
      if (!block) break;
      for (int p = 0; p < c.nranks; ++p) {
        if (p != c.rank || !c.inplace)
          ops.push_back(copy(at(p, NodeSpace::kRecv, c.rank * block), input(c, c.rank, 0), block));
      }
      break;
    }
    default: {  // reduce-scatter, out of place
      const size_t mine = c.blocks[static_cast<size_t>(c.rank)];
      if (mine) fold(at(c.rank, NodeSpace::kRecv, 0), blocks_before(c, c.rank) * e, mine * e);
      break;
    }
  }
  return phases;
}

bool node_schedule_touches(const std::vector<NodePhase>& phases, int rank, NodeSpace space) {
  auto is = [&](const NodeRef& r) { return r.rank == rank && r.space == space; };
  for (const NodePhase& phase : phases) {
    for (const NodeOp& op : phase.ops) {
      if (is(op.dst)) return true;
      for (const NodeRef& src : op.srcs)
        if (is(src)) return true;
    }
  }
  return false;
}

}  // namespace efacoll

// Double-binary-tree allreduce: the vector's two halves go up two different trees (reduced on
// the way to each root) and come back down, chunk by chunk, so that the way up of one chunk
// overlaps the way down of the previous ones. Latency grows with the trees' depth (log2 P)
// instead of the ring's P; each rank moves about the same bytes as in the ring.
#include <algorithm>

#include "coll/builders.h"
#include "coll/tree_shape.h"

namespace efacoll {

Status build_tree_allreduce(const RingArgs& args, Schedule* out) {
  Schedule& s = *out;
  s = Schedule();
  const int n = args.nranks, r = args.rank;
  size_t count = 0;
  for (size_t c : args.block_counts) count += c;
  const size_t esize = args.elem_size, total = count * esize;
  const size_t chunk = std::max<size_t>(1, args.chunk_bytes / esize) * esize;
  s.scratch_bytes = 2 * total;  // one slot per child
  if (total == 0) return Status::ok();
  if (n == 1) {
    if (!args.inplace) {
      Op copy(OpKind::kCopy);
      copy.bytes = total;
      copy.dst = {BufId::kRecv, 0};
      copy.src = {BufId::kSend, 0};
      s.add(copy);
    }
    return Status::ok();
  }
  const std::vector<size_t> halves = even_blocks(count, 2);
  size_t max_chunks = 0;
  for (size_t h : halves) max_chunks = std::max(max_chunks, (h * esize + chunk - 1) / chunk);
  // Per chunk and tree: the way up, and the way down to each of two children. A sender's message
  // ids must differ even between different receivers: the one-sided protocol's clear-to-send
  // comes back tagged with them, from any peer.
  if (6 * max_chunks > kMaxMsgId) return Status(Code::kInvalid, "too many chunks for a tag");

  // Between two ranks messages flow both ways: up one tree and down the other (a leaf of one
  // tree sends up it at once, but down the other tree to the same neighbour only later). Every
  // rank lists the ways up, of both trees, before the ways down, and each in the same order of
  // tree and chunk, so that each peer's sends are listed in the order its receives are
  // (fold.h says why that order matters): first the children's chunks coming up, then the
  // reductions and sends up, then the results coming down and going on down.
  auto up_id = [&](int t, size_t c) { return static_cast<uint32_t>((t * max_chunks + c) * 3); };
  struct Piece {
    size_t at, bytes;  // in the vector
  };
  std::vector<Piece> pieces[2];  // per tree: its half's chunks
  TreeNode nodes[2];
  for (int t = 0; t < 2; ++t) {
    nodes[t] = tree_node(n, t, r);
    const size_t start = t == 0 ? 0 : halves[0] * esize, half_bytes = halves[t] * esize;
    for (size_t off = 0; off < half_bytes; off += chunk)
      pieces[t].push_back({start + off, std::min(chunk, half_bytes - off)});
  }
  std::vector<uint32_t> up_recv[2];
  for (int t = 0; t < 2; ++t) {
    for (size_t c = 0; c < pieces[t].size(); ++c) {
      for (size_t k = 0; k < nodes[t].children.size(); ++k) {
        Op recv(OpKind::kRecv);
        recv.peer = nodes[t].children[k];
        recv.msg_id = up_id(t, c);
        recv.step = 0;
        recv.bytes = pieces[t][c].bytes;
        recv.dst = {BufId::kScratch, k * total + pieces[t][c].at};
        up_recv[t].push_back(s.add(recv));
      }
    }
  }
  // Per tree and chunk: the op after which this rank's chunk has left for the parent (or, at the
  // root, after which recv holds the result).
  std::vector<uint32_t> went_up[2];
  for (int t = 0; t < 2; ++t) {
    const TreeNode& node = nodes[t];
    size_t next_up = 0;
    for (size_t c = 0; c < pieces[t].size(); ++c) {
      const auto [at, bytes] = pieces[t][c];
      // The accumulator is recv; the first reduction reads the input directly.
      uint32_t acc = UINT32_MAX;
      for (size_t k = 0; k < node.children.size(); ++k) {
        const uint32_t rid = up_recv[t][next_up++];
        Op red(OpKind::kReduce);
        red.bytes = bytes;
        red.dst = {BufId::kRecv, at};
        red.src = {acc == UINT32_MAX ? BufId::kSend : BufId::kRecv, at};
        red.src2 = {BufId::kScratch, k * total + at};
        const uint32_t id = s.add(red);
        s.depend(rid, id);
        if (acc != UINT32_MAX) s.depend(acc, id);
        acc = id;
      }
      if (node.parent < 0) {
        if (acc == UINT32_MAX) return Status(Code::kInternal, "a tree root without children");
        went_up[t].push_back(acc);
        continue;
      }
      // A leaf's contribution is its input; an inner node's, its accumulator.
      Op send(OpKind::kSend);
      send.peer = node.parent;
      send.msg_id = up_id(t, c);
      send.bytes = bytes;
      send.src = {acc == UINT32_MAX ? BufId::kSend : BufId::kRecv, at};
      const uint32_t sid = s.add(send);
      if (acc != UINT32_MAX) s.depend(acc, sid);
      went_up[t].push_back(sid);
    }
    if (next_up != up_recv[t].size()) return Status(Code::kInternal, "tree: receives miscounted");
  }
  for (int t = 0; t < 2; ++t) {
    const TreeNode& node = nodes[t];
    // Which of the parent's children this rank is names the messages coming down to it.
    int place = 0;
    if (node.parent >= 0) {
      const std::vector<int> siblings = tree_node(n, t, node.parent).children;
      place = static_cast<int>(std::find(siblings.begin(), siblings.end(), r) - siblings.begin());
    }
    for (size_t c = 0; c < pieces[t].size(); ++c) {
      const auto [at, bytes] = pieces[t][c];
      auto down_to = [&](int k) { return up_id(t, c) + 1 + static_cast<uint32_t>(k); };
      uint32_t result = went_up[t][c];  // the op after which recv holds the final chunk
      if (node.parent >= 0) {
        Op recv(OpKind::kRecv);  // the final value, over the accumulator once it has left
        recv.peer = node.parent;
        recv.msg_id = down_to(place);
        recv.step = 1;
        recv.bytes = bytes;
        recv.dst = {BufId::kRecv, at};
        const uint32_t sid = result;
        result = s.add(recv);
        s.depend(sid, result);
      }
      for (size_t k = 0; k < node.children.size(); ++k) {
        Op send(OpKind::kSend);
        send.peer = node.children[k];
        send.msg_id = down_to(static_cast<int>(k));
        send.step = 1;
        send.bytes = bytes;
        send.src = {BufId::kRecv, at};
        s.depend(result, s.add(send));
      }
    }
  }
  return Status::ok();
}

}  // namespace efacoll

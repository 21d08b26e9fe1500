// Recursive-doubling allgather: in step k each rank swaps everything it holds with the rank
// 2^k away, so all blocks are everywhere after log2(P) steps. For P not a power of two, the
// ranks past the largest power of two p first hand their block to rank r - p, which carries it
// through the exchanges and returns the whole result at the end.
#include "coll/builders.h"
#include "coll/fold.h"

namespace efacoll {

Status build_rd_allgather(const RingArgs& args, Schedule* out) {
  Schedule& s = *out;
  s = Schedule();
  RingLayout layout(args);
  const int n = args.nranks, r = args.rank;
  const size_t chunk = std::max<size_t>(1, args.chunk_bytes / args.elem_size) * args.elem_size;
  const Fold fold = fold_of(n);
  const int p = fold.p, steps = fold.steps, extra = fold.extra;
  const size_t max_chunks = max_block_chunks(layout, n, chunk);
  // Message ids: (step, block, chunk); step 0 folds in, steps 1..log2 p exchange, then out.
  if (static_cast<uint64_t>(steps + 2) * n * max_chunks > kMaxMsgId) {
    return Status(Code::kInvalid, "too many chunks for a tag");
  }
  auto msg = [&](int step, int block) {
    return static_cast<uint32_t>((static_cast<size_t>(step) * n + block) * max_chunks);
  };
  auto block_ref = [&](int b) { return BufRef{BufId::kRecv, layout.block_offset(b)}; };
  // The ops after which each block of recv holds its data.
  std::vector<std::vector<uint32_t>> ready(n);
  if (!args.inplace && layout.block_bytes(r) > 0) {
    Op copy(OpKind::kCopy);
    copy.bytes = layout.block_bytes(r);
    copy.dst = block_ref(r);
    copy.src = {BufId::kSend, 0};
    ready[r] = {s.add(copy)};
  }
  if (n == 1) return Status::ok();
  const BufRef own = args.inplace ? block_ref(r) : BufRef{BufId::kSend, 0};

  if (r >= p) {  // hand the block over, then receive everything
    std::vector<uint32_t> sent =
        add_chunked(&s, OpKind::kSend, r - p, msg(0, r), 0, own, layout.block_bytes(r), chunk, {});
    for (int b : blocks_in_arrival_order(fold, r - p, p)) {
      if (b == r) continue;
      add_chunked(&s, OpKind::kRecv, r - p, msg(steps + 1, b), steps + 1, block_ref(b),
                  layout.block_bytes(b), chunk, {});
    }
    return Status::ok();
  }
  if (r < extra) {
    ready[r + p] = add_chunked(&s, OpKind::kRecv, r + p, msg(0, r + p), 0, block_ref(r + p),
                               layout.block_bytes(r + p), chunk, {});
  }
  for (int k = 0; k < steps; ++k) {
    const int d = 1 << k, peer = r ^ d;
    for (int b : blocks_in_arrival_order(fold, r, d)) {
      add_chunked(&s, OpKind::kSend, peer, msg(k + 1, b), k + 1,
                  b == r && !args.inplace ? own : block_ref(b), layout.block_bytes(b), chunk,
                  b == r && !args.inplace ? std::vector<uint32_t>{} : ready[b]);
    }
    for (int b : blocks_in_arrival_order(fold, peer, d)) {
      ready[b] = add_chunked(&s, OpKind::kRecv, peer, msg(k + 1, b), k + 1, block_ref(b),
                             layout.block_bytes(b), chunk, {});
    }
  }
  if (r < extra) {
    for (int b : blocks_in_arrival_order(fold, r, p)) {
      if (b == r + p) continue;
      add_chunked(&s, OpKind::kSend, r + p, msg(steps + 1, b), steps + 1, block_ref(b),
                  layout.block_bytes(b), chunk, ready[b]);
    }
  }
  return Status::ok();
}

}  // namespace efacoll

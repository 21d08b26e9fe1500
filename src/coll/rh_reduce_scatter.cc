// Recursive-halving reduce-scatter: in step k each rank sends the half of its current range that
// its partner keeps (the rank P/2^(k+1) away) and reduces the half it keeps, so that after
// log2(P) steps it holds its own block, reduced over all ranks. For P not a power of two, the
// ranks past the largest power of two p first fold their whole vector into rank r - p, which
// then keeps their block beside its own and sends it back at the end.
#include "coll/builders.h"
#include "coll/fold.h"

namespace efacoll {

Status build_rh_reduce_scatter(const RingArgs& args, Schedule* out) {
  Schedule& s = *out;
  s = Schedule();
  RingLayout layout(args);
  const int n = args.nranks, r = args.rank;
  const size_t total = layout.total_bytes();
  const size_t chunk = std::max<size_t>(1, args.chunk_bytes / args.elem_size) * args.elem_size;
  const Fold fold = fold_of(n);
  const int p = fold.p, steps = fold.steps, extra = fold.extra;
  // Scratch: the accumulator, then one receive slot per block (reused each step).
  s.scratch_bytes = 2 * total;
  auto acc = [&](int b) { return BufRef{BufId::kScratch, layout.block_offset(b)}; };
  auto slot = [&](int b) { return BufRef{BufId::kScratch, total + layout.block_offset(b)}; };
  auto copy_out = [&](BufRef from, uint32_t dep) {
    if (layout.block_bytes(r) == 0) return;
    Op copy(OpKind::kCopy);
    copy.bytes = layout.block_bytes(r);
    copy.dst = {BufId::kRecv, 0};
    copy.src = from;
    const uint32_t id = s.add(copy);
    if (dep != UINT32_MAX) s.depend(dep, id);
  };
  if (n == 1) {
    if (!args.inplace) copy_out({BufId::kSend, 0}, UINT32_MAX);
    return Status::ok();
  }
  const size_t max_chunks = max_block_chunks(layout, n, chunk);
  const size_t fold_chunks = chunk_count(total, chunk);
  if (static_cast<uint64_t>(steps + 2) * n * max_chunks + fold_chunks > kMaxMsgId) {
    return Status(Code::kInvalid, "too many chunks for a tag");
  }
  // Message ids: the fold first (one range), then (step, block, chunk).
  auto msg = [&](int step, int block) {
    return static_cast<uint32_t>(fold_chunks +
                                 (static_cast<size_t>(step) * n + block) * max_chunks);
  };

  if (r >= p) {  // fold the whole vector in, then receive the own block
    const std::vector<uint32_t> sent =
        add_chunked(&s, OpKind::kSend, r - p, 0, 0, {BufId::kSend, 0}, total, chunk, {});
    std::vector<uint32_t> got = add_chunked(&s, OpKind::kRecv, r - p, msg(steps + 1, r), steps + 1,
                                            slot(r), layout.block_bytes(r), chunk, {});
    if (layout.block_bytes(r)) {
      Op copy(OpKind::kCopy);  // in place, the input (recv) may be overwritten only now
      copy.bytes = layout.block_bytes(r);
      copy.dst = {BufId::kRecv, 0};
      copy.src = slot(r);
      const uint32_t id = s.add(copy);
      for (uint32_t g : got) s.depend(g, id);
      for (uint32_t d : sent) s.depend(d, id);
    }
    return Status::ok();
  }
  // The accumulator starts as the input, or as input + a folded-in partner's vector.
  uint32_t start;
  if (r < extra) {
    std::vector<uint32_t> got =
        add_chunked(&s, OpKind::kRecv, r + p, 0, 0, {BufId::kScratch, total}, total, chunk, {});
    Op red(OpKind::kReduce);
    red.bytes = total;
    red.dst = {BufId::kScratch, 0};
    red.src = {BufId::kSend, 0};
    red.src2 = {BufId::kScratch, total};
    start = s.add(red);
    for (uint32_t g : got) s.depend(g, start);
  } else {
    Op copy(OpKind::kCopy);
    copy.bytes = total;
    copy.dst = {BufId::kScratch, 0};
    copy.src = {BufId::kSend, 0};
    start = s.add(copy);
  }
  // The last op that wrote each block's accumulator, and the last that read its slot.
  std::vector<uint32_t> wrote(n, start), slot_read(n, start);
  for (int k = 0; k < steps; ++k) {
    const int d = p >> (k + 1), peer = r ^ d;
    const int keep_lo = (r & ~(2 * d - 1)) + ((r & d) ? d : 0);
    const int give_lo = (r & ~(2 * d - 1)) + ((r & d) ? 0 : d);
    for (int b : blocks_with_partners(fold, give_lo, d)) {
      add_chunked(&s, OpKind::kSend, peer, msg(k + 1, b), k + 1, acc(b), layout.block_bytes(b),
                  chunk, {wrote[b]});
    }
    for (int b : blocks_with_partners(fold, keep_lo, d)) {
      if (layout.block_bytes(b) == 0) continue;
      std::vector<uint32_t> got =
          add_chunked(&s, OpKind::kRecv, peer, msg(k + 1, b), k + 1, slot(b), layout.block_bytes(b),
                      chunk, {slot_read[b]});
      Op red(OpKind::kReduce);
      red.step = k + 1;
      red.bytes = layout.block_bytes(b);
      red.dst = acc(b);
      red.src = acc(b);
      red.src2 = slot(b);
      const uint32_t id = s.add(red);
      for (uint32_t g : got) s.depend(g, id);
      s.depend(wrote[b], id);
      wrote[b] = slot_read[b] = id;
    }
  }
  copy_out(acc(r), wrote[r]);
  if (r < extra) {
    add_chunked(&s, OpKind::kSend, r + p, msg(steps + 1, r + p), steps + 1, acc(r + p),
                layout.block_bytes(r + p), chunk, {wrote[r + p]});
  }
  return Status::ok();
}

}  // namespace efacoll

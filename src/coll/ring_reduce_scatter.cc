// Ring reduce-scatter: in n-1 steps each block travels once around the ring, every rank adding
// its own contribution, and ends fully reduced at its owner. Partial sums live in scratch.
#include "coll/builders.h"

namespace efacoll {

Status build_ring_reduce_scatter(const RingArgs& args, Schedule* out) {
  RingLayout ring(args);
  const int n = args.nranks, r = args.rank;
  Schedule& s = *out;
  s = Schedule();
  s.scratch_bytes = ring.total_bytes();
  if (!ring.msg_ids_fit(n)) return Status(Code::kInvalid, "too many chunks: raise the chunk size");

  const size_t own = ring.block_offset(r);
  if (n == 1) {
    if (!args.inplace && ring.block_bytes(0) > 0) {
      Op copy{OpKind::kCopy};
      copy.bytes = ring.block_bytes(0);
      copy.dst = {BufId::kRecv, 0};
      copy.src = {BufId::kSend, 0};
      s.add(copy);
    }
    return Status::ok();
  }

  std::vector<uint32_t> prev_reduce;  // per chunk of the block reduced at the previous step
  for (int step = 0; step < n - 1; ++step) {
    const int sb = ring.mod(r - step - 1), rb = ring.mod(r - step - 2);
    std::vector<uint32_t> reduce_ids(ring.chunks(rb));
    for (int c = 0; c < ring.chunks(rb); ++c) {
      const size_t at = ring.block_offset(rb) + ring.chunk_offset(rb, c);
      Op recv{OpKind::kRecv};
      recv.peer = ring.left();
      recv.msg_id = ring.msg_id(step, c);
      recv.step = step;
      recv.bytes = ring.chunk_bytes(rb, c);
      recv.dst = {BufId::kScratch, at};
      uint32_t recv_id = s.add(recv);

      Op red{OpKind::kReduce};
      red.step = step;
      red.bytes = recv.bytes;
      const bool final_block = (rb == r);
      // In place, the result must not land in recv[0..] while other blocks of the same buffer
      // may still be read: it goes to scratch and is copied once everything else is done.
      red.dst = final_block && !args.inplace ? BufRef{BufId::kRecv, ring.chunk_offset(rb, c)}
                                             : BufRef{BufId::kScratch, at};
      red.src = {BufId::kSend, at};
      red.src2 = {BufId::kScratch, at};
      reduce_ids[c] = s.add(red);
      s.depend(recv_id, reduce_ids[c]);
    }
    for (int c = 0; c < ring.chunks(sb); ++c) {
      const size_t at = ring.block_offset(sb) + ring.chunk_offset(sb, c);
      Op send{OpKind::kSend};
      send.peer = ring.right();
      send.msg_id = ring.msg_id(step, c);
      send.step = step;
      send.bytes = ring.chunk_bytes(sb, c);
      send.src = {step == 0 ? BufId::kSend : BufId::kScratch, at};
      uint32_t send_id = s.add(send);
      if (step > 0) s.depend(prev_reduce[c], send_id);
    }
    prev_reduce = std::move(reduce_ids);
  }

  if (args.inplace && ring.block_bytes(r) > 0) {
    Op copy{OpKind::kCopy};
    copy.step = n - 1;
    copy.bytes = ring.block_bytes(r);
    copy.dst = {BufId::kRecv, 0};
    copy.src = {BufId::kScratch, own};
    uint32_t copy_id = s.add(copy);
    for (uint32_t i = 0; i < copy_id; ++i) s.depend(i, copy_id);
  }
  return Status::ok();
}

}  // namespace efacoll

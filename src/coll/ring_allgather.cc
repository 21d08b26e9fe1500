// Ring allgather: in n-1 steps each rank forwards to its right the block it received last,
// straight into its place in the receive buffer.
#include "coll/builders.h"

namespace efacoll {

Status build_ring_allgather(const RingArgs& args, Schedule* out) {
  RingLayout ring(args);
  const int n = args.nranks, r = args.rank;
  Schedule& s = *out;
  s = Schedule();
  if (!ring.msg_ids_fit(n)) return Status(Code::kInvalid, "too many chunks: raise the chunk size");

  if (!args.inplace && ring.block_bytes(r) > 0) {
    Op copy{OpKind::kCopy};
    copy.bytes = ring.block_bytes(r);
    copy.dst = {BufId::kRecv, ring.block_offset(r)};
    copy.src = {BufId::kSend, 0};
    s.add(copy);
  }

  std::vector<uint32_t> prev_recv;
  for (int step = 0; step < n - 1; ++step) {
    const int sb = ring.mod(r - step), rb = ring.mod(r - step - 1);
    std::vector<uint32_t> recv_ids(ring.chunks(rb));
    for (int c = 0; c < ring.chunks(rb); ++c) {
      Op recv{OpKind::kRecv};
      recv.peer = ring.left();
      recv.msg_id = ring.msg_id(step, c);
      recv.step = step;
      recv.bytes = ring.chunk_bytes(rb, c);
      recv.dst = {BufId::kRecv, ring.block_offset(rb) + ring.chunk_offset(rb, c)};
      recv_ids[c] = s.add(recv);
    }
    for (int c = 0; c < ring.chunks(sb); ++c) {
      Op send{OpKind::kSend};
      send.peer = ring.right();
      send.msg_id = ring.msg_id(step, c);
      send.step = step;
      send.bytes = ring.chunk_bytes(sb, c);
      // The first step sends the caller's own data from where it already is.
      send.src = step == 0 && !args.inplace
                     ? BufRef{BufId::kSend, ring.chunk_offset(sb, c)}
                     : BufRef{BufId::kRecv, ring.block_offset(sb) + ring.chunk_offset(sb, c)};
      uint32_t send_id = s.add(send);
      if (step > 0) s.depend(prev_recv[c], send_id);
    }
    prev_recv = std::move(recv_ids);
  }
  return Status::ok();
}

}  // namespace efacoll

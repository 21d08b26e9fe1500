// Ring allreduce = ring reduce-scatter into the receive buffer, then ring allgather of the
// reduced blocks, chunk by chunk so that the two phases overlap.
#include "coll/builders.h"

namespace efacoll {

Status build_ring_allreduce(const RingArgs& args, Schedule* out) {
  RingLayout ring(args);
  const int n = args.nranks, r = args.rank;
  Schedule& s = *out;
  s = Schedule();
  s.scratch_bytes = ring.total_bytes();
  if (!ring.msg_ids_fit(2 * n))
    return Status(Code::kInvalid, "too many chunks: raise the chunk size");

  if (n == 1) {
    if (!args.inplace && ring.total_bytes() > 0) {
      Op copy{OpKind::kCopy};
      copy.bytes = ring.total_bytes();
      copy.dst = {BufId::kRecv, 0};
      copy.src = {BufId::kSend, 0};
      s.add(copy);
    }
    return Status::ok();
  }

  constexpr uint32_t kNone = UINT32_MAX;
  // Last reduce / send of each (block, chunk) in the reduce-scatter phase: the allgather phase
  // may overwrite that memory only after them.
  std::vector<std::vector<uint32_t>> rs_reduce(n), rs_send(n);
  for (int b = 0; b < n; ++b) {
    rs_reduce[b].assign(ring.chunks(b), kNone);
    rs_send[b].assign(ring.chunks(b), kNone);
  }

  for (int step = 0; step < n - 1; ++step) {
    const int sb = ring.mod(r - step - 1), rb = ring.mod(r - step - 2);
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
      red.dst = {BufId::kRecv, at};
      red.src = {BufId::kSend, at};
      red.src2 = {BufId::kScratch, at};
      rs_reduce[rb][c] = s.add(red);
      s.depend(recv_id, rs_reduce[rb][c]);
    }
    for (int c = 0; c < ring.chunks(sb); ++c) {
      const size_t at = ring.block_offset(sb) + ring.chunk_offset(sb, c);
      Op send{OpKind::kSend};
      send.peer = ring.right();
      send.msg_id = ring.msg_id(step, c);
      send.step = step;
      send.bytes = ring.chunk_bytes(sb, c);
      send.src = {step == 0 ? BufId::kSend : BufId::kRecv, at};
      rs_send[sb][c] = s.add(send);
      if (step > 0) s.depend(rs_reduce[sb][c], rs_send[sb][c]);
    }
  }

  std::vector<uint32_t> prev_recv;
  for (int t = 0; t < n - 1; ++t) {
    const int step = n - 1 + t;
    const int sb = ring.mod(r - t), rb = ring.mod(r - t - 1);
    std::vector<uint32_t> recv_ids(ring.chunks(rb));
    for (int c = 0; c < ring.chunks(rb); ++c) {
      Op recv{OpKind::kRecv};
      recv.peer = ring.left();
      recv.msg_id = ring.msg_id(step, c);
      recv.step = step;
      recv.bytes = ring.chunk_bytes(rb, c);
      recv.dst = {BufId::kRecv, ring.block_offset(rb) + ring.chunk_offset(rb, c)};
      recv_ids[c] = s.add(recv);
      for (uint32_t before : {rs_reduce[rb][c], rs_send[rb][c]}) {
        if (before != kNone) s.depend(before, recv_ids[c]);
      }
    }
    for (int c = 0; c < ring.chunks(sb); ++c) {
      Op send{OpKind::kSend};
      send.peer = ring.right();
      send.msg_id = ring.msg_id(step, c);
      send.step = step;
      send.bytes = ring.chunk_bytes(sb, c);
      send.src = {BufId::kRecv, ring.block_offset(sb) + ring.chunk_offset(sb, c)};
      uint32_t send_id = s.add(send);
      s.depend(t == 0 ? rs_reduce[r][c] : prev_recv[c], send_id);
    }
    prev_recv = std::move(recv_ids);
  }
  return Status::ok();
}

}  // namespace efacoll

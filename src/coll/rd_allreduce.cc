// Recursive-doubling allreduce for small messages: log2(P) exchanges of the whole vector instead
// of the ring's 2(P-1) steps. For P not a power of two, the ranks past the largest power of two
// p first fold their vector into rank r - p, and get the result back at the end.
#include "coll/builders.h"
#include "coll/fold.h"

namespace efacoll {

Status build_rd_allreduce(const RingArgs& args, Schedule* out) {
  Schedule& s = *out;
  s = Schedule();
  const int n = args.nranks, r = args.rank;
  size_t count = 0;
  for (size_t c : args.block_counts) count += c;
  const size_t bytes = count * args.elem_size;
  const Fold fold = fold_of(n);
  const int p = fold.p, steps = fold.steps, extra = fold.extra;
  // One scratch slot per exchange: no slot is ever reused, so no reuse ordering is needed.
  s.scratch_bytes = bytes * (steps + 1);
  if (bytes == 0) return Status::ok();

  constexpr uint32_t kNone = UINT32_MAX;
  uint32_t last = kNone;       // the op that last wrote the accumulator (recv)
  uint32_t last_read = kNone;  // a send still reading it
  auto after = [&](uint32_t id, uint32_t dep) {
    if (dep != kNone) s.depend(dep, id);
  };
  if (!args.inplace) {
    Op copy(OpKind::kCopy);
    copy.bytes = bytes;
    copy.dst = {BufId::kRecv, 0};
    copy.src = {BufId::kSend, 0};
    last = s.add(copy);
  }
  auto exchange_send = [&](int peer, uint32_t msg, uint32_t step) {
    Op send(OpKind::kSend);
    send.peer = peer;
    send.msg_id = msg;
    send.step = step;
    send.bytes = bytes;
    send.src = {BufId::kRecv, 0};
    uint32_t id = s.add(send);
    after(id, last);
    return id;
  };
  auto receive_and_reduce = [&](int peer, uint32_t msg, uint32_t step, uint32_t must_follow) {
    Op recv(OpKind::kRecv);
    recv.peer = peer;
    recv.msg_id = msg;
    recv.step = step;
    recv.bytes = bytes;
    recv.dst = {BufId::kScratch, bytes * step};
    uint32_t rid = s.add(recv);
    Op red(OpKind::kReduce);
    red.step = step;
    red.bytes = bytes;
    red.dst = {BufId::kRecv, 0};
    red.src = {BufId::kRecv, 0};
    red.src2 = {BufId::kScratch, bytes * step};
    uint32_t id = s.add(red);
    s.depend(rid, id);
    after(id, last);
    after(id, must_follow);  // a send of the old accumulator must be done before it changes
    last = id;
  };

  if (r >= p) {
    // Fold in, then wait for the result.
    last_read = exchange_send(r - p, 0, 0);
    Op recv(OpKind::kRecv);
    recv.peer = r - p;
    recv.msg_id = static_cast<uint32_t>(steps + 1);
    recv.step = static_cast<uint32_t>(steps + 1);
    recv.bytes = bytes;
    recv.dst = {BufId::kRecv, 0};
    s.depend(last_read, s.add(recv));
    return Status::ok();
  }
  if (r < extra) receive_and_reduce(r + p, 0, 0, kNone);
  for (int k = 0; k < steps; ++k) {
    const int peer = r ^ (1 << k);
    const uint32_t step = static_cast<uint32_t>(k + 1);
    uint32_t send = exchange_send(peer, step, step);
    receive_and_reduce(peer, step, step, send);
  }
  if (r < extra)
    exchange_send(r + p, static_cast<uint32_t>(steps + 1), static_cast<uint32_t>(steps + 1));
  return Status::ok();
}

}  // namespace efacoll

#include "core/staging.h"

#include <algorithm>

namespace efacoll {

size_t largest_message(const Schedule& schedule) {
  size_t largest = 0;
  for (const Op& op : schedule.ops) {
    if (op.kind == OpKind::kSend || op.kind == OpKind::kRecv) largest = std::max(largest, op.bytes);
  }
  return largest;
}

namespace {

// Round-robin slots; each remembers the new op after which it is free again.
class SlotRing {
 public:
  SlotRing(int count, size_t first_offset, size_t slot_bytes)
      : last_user_(count, kFree), first_(first_offset), bytes_(slot_bytes) {}
  // Returns the slot's offset in the stage and the op that must finish before reusing it.
  size_t take(uint32_t* previous_user) {
    slot_ = next_;
    next_ = (next_ + 1) % last_user_.size();
    *previous_user = last_user_[slot_];
    return first_ + slot_ * bytes_;
  }
  void release_after(uint32_t op) { last_user_[slot_] = op; }
  static constexpr uint32_t kFree = UINT32_MAX;

 private:
  std::vector<uint32_t> last_user_;
  size_t first_, bytes_;
  size_t next_ = 0, slot_ = 0;
};

}  // namespace

Schedule stage_network_ops(const Schedule& in, const GpuBuffers& gpu, const StagePlan& plan) {
  Schedule out;
  out.scratch_bytes = in.scratch_bytes;
  out.algorithm = in.algorithm;
  const size_t n = in.ops.size();
  // Where each old op's dependencies now land (entry) and what now marks it done (exit).
  std::vector<uint32_t> entry(n), exit(n);
  SlotRing send_slots(plan.send_slots, 0, plan.slot_bytes);
  SlotRing recv_slots(plan.recv_slots, plan.slot_bytes * plan.send_slots, plan.slot_bytes);

  for (size_t i = 0; i < n; ++i) {
    const Op& op = in.ops[i];
    uint32_t previous = SlotRing::kFree;
    if (op.kind == OpKind::kSend && gpu.on_gpu(op.src.buf)) {
      const size_t slot = send_slots.take(&previous);
      Op to_host(OpKind::kCopy);
      to_host.step = op.step;
      to_host.bytes = op.bytes;
      to_host.src = op.src;
      to_host.dst = {BufId::kStage, slot};
      Op send = op;
      send.src = {BufId::kStage, slot};
      entry[i] = out.add(to_host);
      exit[i] = out.add(send);
      out.depend(entry[i], exit[i]);
      send_slots.release_after(exit[i]);
    } else if (op.kind == OpKind::kRecv && gpu.on_gpu(op.dst.buf)) {
      const size_t slot = recv_slots.take(&previous);
      Op recv = op;
      recv.dst = {BufId::kStage, slot};
      Op to_gpu(OpKind::kCopy);
      to_gpu.step = op.step;
      to_gpu.bytes = op.bytes;
      to_gpu.src = {BufId::kStage, slot};
      to_gpu.dst = op.dst;
      entry[i] = out.add(recv);
      exit[i] = out.add(to_gpu);
      out.depend(entry[i], exit[i]);
      recv_slots.release_after(exit[i]);
    } else {
      entry[i] = exit[i] = out.add(op);
    }
    if (previous != SlotRing::kFree) out.depend(previous, entry[i]);
  }
  for (size_t i = 0; i < n; ++i) {
    for (uint32_t next : in.successors[i]) out.depend(exit[i], entry[next]);
  }
  return out;
}

}  // namespace efacoll

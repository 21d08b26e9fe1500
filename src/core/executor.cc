#include "core/executor.h"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <queue>
#include <set>

#include "common/log.h"
#include "core/call_signature.h"
#include "core/executor_state.h"
#include "core/peer_watch.h"
#include "transport/tag.h"

namespace efacoll {

void IdleBackoff::idle() {
  if (idle_++ == 0) since_ = std::chrono::steady_clock::now();
  if (idle_ < 64) return;
  if (std::chrono::steady_clock::now() - since_ < std::chrono::milliseconds(1)) {
    sched_yield();
    return;
  }
  struct timespec ts = {0, 20000};  // 20 us
  nanosleep(&ts, nullptr);
}

namespace exec {

uint8_t* Executor::resolve(const BufRef& ref) const {
  switch (ref.buf) {
    case BufId::kSend:
      return const_cast<uint8_t*>(static_cast<const uint8_t*>(bufs_.send)) + ref.offset;
    case BufId::kRecv:
      return static_cast<uint8_t*>(bufs_.recv) + ref.offset;
    case BufId::kScratch:
      return static_cast<uint8_t*>(bufs_.scratch) + ref.offset;
    case BufId::kStage:
      return static_cast<uint8_t*>(bufs_.stage) + ref.offset;
  }
  return nullptr;
}

const MemRegion* Executor::region_of(BufId id) const {
  switch (id) {
    case BufId::kSend:
      return bufs_.send_mr;
    case BufId::kRecv:
      return bufs_.recv_mr;
    case BufId::kScratch:
      return bufs_.scratch_mr;
    case BufId::kStage:
      return bufs_.stage_mr;
  }
  return nullptr;
}

void Executor::on_complete(Completion* c, const Status& status, size_t bytes) {
  auto* slot = static_cast<OpSlot*>(c);
  slot->posted = false;
  slot->executor->in_flight_--;
  if (slot->network) slot->executor->posted_[slot->is_recv]--;
  if (!slot->network || slot->is_recv) slot->executor->answered_++;
  slot->executor->finish(slot->index, status, bytes);
}

void Executor::finish(uint32_t index, const Status& status, size_t bytes) {
  const Op& op = s_.ops[index];
  const bool network = op.kind == OpKind::kSend || op.kind == OpKind::kRecv;
  if (network && !status.is_ok() && !slots_[index].cancel_asked) links_in_doubt_.insert(op.peer);
  if (network && mismatched(op, slots_[index], status, bytes)) {
    // Counted as done below: the data is not trusted, the schedule goes on.
  } else if (!status.is_ok() && error_.is_ok()) {
    error_ = op_error(op, status);
  }
  if (op.kind == OpKind::kRecv && status.is_ok() && on_gpu(op.dst.buf))
    unflushed_ = static_cast<bool>(ctx_.flush_network_writes);
  ++done_;
  release(index);
}

void Executor::order_lanes() {
  const size_t n = s_.ops.size();
  lane_prev_.assign(n, kNoOp);
  lane_next_.assign(n, kNoOp);
  lane_posted_.assign(n, false);
  held_.assign(n, false);
  uint64_t lanes = 0;
  for (const Op& op : s_.ops) {
    if (lane_of(op) != kNoLane) lanes = std::max(lanes, lane_of(op) + 1);
  }
  std::vector<uint32_t> last(lanes, kNoOp);  // by lane: its latest op so far
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t next : s_.successors[i]) {
      if (next <= i && error_.is_ok())
        error_ = Status(Code::kInternal, ctx_.what + ": schedule op " + std::to_string(next) +
                                             " depends on op " + std::to_string(i) +
                                             ", listed after it");
    }
    const uint64_t lane = lane_of(s_.ops[i]);
    if (lane == kNoLane) continue;
    if (last[lane] != kNoOp) {
      lane_prev_[i] = last[lane];
      lane_next_[last[lane]] = i;
    }
    last[lane] = i;
  }
}

bool Executor::held_behind_lane(uint32_t index) {
  if (lane_prev_.empty() || lane_prev_[index] == kNoOp || lane_posted_[lane_prev_[index]])
    return false;
  held_[index] = true;
  return true;
}

void Executor::lane_posted(uint32_t index) {
  if (lane_prev_.empty()) return;
  lane_posted_[index] = true;
  const uint32_t next = lane_next_[index];
  if (next != kNoOp && held_[next]) {
    held_[next] = false;
    ready_.push(next);
  }
}

void Executor::release(uint32_t index) {
  for (uint32_t next : s_.successors[index]) {
    if (--deps_[next] == 0) ready_.push(next);
  }
}

bool Executor::on_gpu(BufId id) const {
  switch (id) {
    case BufId::kSend:
      return bufs_.send_on_gpu;
    case BufId::kRecv:
      return bufs_.recv_on_gpu;
    case BufId::kScratch:
      return bufs_.scratch_on_gpu;
    case BufId::kStage:
      return false;
  }
  return false;
}

Status Executor::issue(const Op& op, OpSlot* slot) {
  switch (op.kind) {
    case OpKind::kSend:
    case OpKind::kRecv: {
      PeerAddr peer = (*ctx_.peers)[op.peer];
      const int sender = op.kind == OpKind::kSend ? ctx_.rank : op.peer;
      const uint32_t signature = mismatch_.is_ok() ? ctx_.signature
                                 : same_shape_     ? kSameShapePoisonSignature
                                                   : kPoisonSignature;
      const uint64_t tag = make_tag(ctx_.comm_id, ctx_.seq, sender, op.msg_id, signature);
      slot->ignore = kSignatureMask;
      slot->call_seq = ctx_.seq;
      slot->receiver_rank = static_cast<uint32_t>(ctx_.rank);
      return op.kind == OpKind::kSend ? ctx_.transport->send(peer, resolve(op.src), op.bytes, tag,
                                                             region_of(op.src.buf), slot)
                                      : ctx_.transport->recv(peer, resolve(op.dst), op.bytes, tag,
                                                             region_of(op.dst.buf), slot);
    }
    case OpKind::kReduce:
      EFACOLL_RETURN_IF_ERROR(flush_if_needed());
      return ctx_.local->reduce(resolve(op.dst), resolve(op.src), resolve(op.src2),
                                op.bytes / dtype_size(ctx_.dtype), ctx_.dtype, ctx_.op, slot);
    case OpKind::kCopy: {
      EFACOLL_RETURN_IF_ERROR(flush_if_needed());
      const bool from_gpu = on_gpu(op.src.buf), to_gpu = on_gpu(op.dst.buf);
      CopyKind kind = from_gpu ? (to_gpu ? CopyKind::kDeviceToDevice : CopyKind::kDeviceToHost)
                               : (to_gpu ? CopyKind::kHostToDevice : CopyKind::kHostToHost);
      return ctx_.local->copy(resolve(op.dst), resolve(op.src), op.bytes, kind, slot);
    }
  }
  return Status(Code::kInternal, "unknown op");
}

Status Executor::start(uint32_t index) {
  OpSlot& slot = slots_[index];
  slot.fn = &Executor::on_complete;
  slot.executor = this;
  slot.index = index;
  // Counted before issuing: a local operation may complete inside issue().
  const OpKind kind = s_.ops[index].kind;
  slot.network = kind == OpKind::kSend || kind == OpKind::kRecv;
  slot.is_recv = kind == OpKind::kRecv;
  // The provider's queue is full of ours: wait for completions, lowest index first.
  if (slot.network && posted_[slot.is_recv] >= ctx_.max_posted)
    return Status(Code::kAgain, "queue full");
  slot.posted = true;
  ++in_flight_;
  if (slot.network) ++posted_[slot.is_recv];
  Status st = issue(s_.ops[index], &slot);
  if (!st.is_ok()) {
    slot.posted = false;
    --in_flight_;
    if (slot.network) --posted_[slot.is_recv];
  }
  return st;
}

Status Executor::run() {
  for (uint32_t i = 0; i < s_.ops.size(); ++i) {
    if (deps_[i] == 0) ready_.push(i);
  }
  IdleBackoff backoff;
  StopForgiveness stops(ctx_.timeout);
  auto last_progress = std::chrono::steady_clock::now();
  auto next_look = last_progress;
  size_t answered_seen = 0;
  size_t done_seen = 0;
  while (done_ < s_.ops.size()) {
    stops.pass_begins();
    // Another thread's progress() may have run our completions while we waited unlocked.
    bool moved = done_ != done_seen;
    done_seen = done_;
    // Operations a full queue turned away: retried after progress. Later ones still start
    // (a local reduction, or a send while receives fill their queue).
    deferred_.clear();
    turned_away_.clear();
    while (!ready_.empty() && error_.is_ok()) {
      // Popped first: an operation that completes at once pushes its successors.
      uint32_t index = ready_.top();
      ready_.pop();
      if (held_behind_lane(index)) continue;
      const uint64_t lane = lane_of(s_.ops[index]);
      if (lane != kNoLane && turned_away_.count(lane)) {
        deferred_.push_back(index);
        continue;
      }
      Status st = start(index);
      if (st.code() == Code::kAgain) {
        deferred_.push_back(index);
        if (lane != kNoLane) turned_away_.insert(lane);
        continue;
      }
      if (!st.is_ok()) {
        error_ = op_error(s_.ops[index], st);
        if (lane != kNoLane) links_in_doubt_.insert(s_.ops[index].peer);
      } else {
        lane_posted(index);
      }
      moved = true;
    }
    for (uint32_t index : deferred_) ready_.push(index);
    // Only this call's operations count: the transport also completes other calls' (threads on
    // other communicators) and the peer watch's looks.
    const size_t done_before = done_;
    int completed = 0, local_completed = 0;
    Status st = ctx_.transport->progress(&completed);
    if (!st.is_ok() && error_.is_ok()) error_ = in_context(st);
    st = ctx_.local->progress(&local_completed);
    if (!st.is_ok() && error_.is_ok()) error_ = in_context(st);
    // What this rank found itself says more than a peer's notice that it found something.
    if (!watch_.found().is_ok() && error_.is_ok())
      error_ = mismatch_.is_ok() ? in_context(watch_.found()) : mismatch_;
    if (!error_.is_ok()) return fail_with_cleanup(error_);
    if (done_ != done_before || moved) {
      backoff.reset();
      // What arrived, and local work, is progress; sends finishing (and the sends they let
      // start) are not while receives wait: draining a backlog of sends to a live peer must not
      // hide, past EFACOLL_TIMEOUT, the peer that stopped answering.
      const auto now = std::chrono::steady_clock::now();
      last_progress += stops.forgiven(now);
      if (answered_ != answered_seen || posted_[1] == 0) last_progress = now;
      answered_seen = answered_;
      if (now - last_progress <= ctx_.timeout) continue;
    }
    if (ctx_.yield_lock) {
      // A waiting thread gets in at the latest when the backoff starts yielding the CPU.
      ctx_.yield_lock->unlock();
      backoff.idle();
      const auto asked = std::chrono::steady_clock::now();
      ctx_.yield_lock->lock();
      stops.waited_for_lock(std::chrono::steady_clock::now() - asked);
    } else {
      backoff.idle();
    }
    const auto now = std::chrono::steady_clock::now();
    last_progress += stops.forgiven(now);
    if (now - last_progress > look_every_ && now >= next_look) {
      look_at_peers(std::chrono::duration_cast<std::chrono::milliseconds>(now - last_progress));
      next_look = now + look_every_;
      if (ctx_.on_stall) {
        Status said = ctx_.on_stall();
        if (!said.is_ok()) return fail_with_cleanup(said);
      }
    }
    // Calls of different shapes can wait on each other in a circle with nothing left to peek
    // at: once such a mismatch is known and nothing comes, the notices tell the peers instead.
    if (!mismatch_.is_ok() && !same_shape_ && now - last_progress > 2 * look_every_)
      return fail_with_cleanup(mismatch_);
    if (now - last_progress > ctx_.timeout) {
      return fail_with_cleanup(
          Status(mismatch_.is_ok() ? Code::kTimeout : Code::kMismatch, timeout_message()));
    }
  }
  settle_watch();
  if (error_.is_ok()) error_ = flush_if_needed();
  return error_.is_ok() ? mismatch_ : error_;
}

Status Executor::flush_if_needed() {
  if (!unflushed_) return Status::ok();
  unflushed_ = false;
  return ctx_.flush_network_writes();
}

}  // namespace exec

Status execute_schedule(const Schedule& schedule, const ExecContext& ctx, const ExecBuffers& bufs) {
  exec::Executor executor(schedule, ctx, bufs);
  return executor.run();
}

}  // namespace efacoll

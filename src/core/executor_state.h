// The executor's state, shared by its two files: executor.cc (posting and progress) and
// executor_failure.cc (mismatches, timeouts, and the cleanup of a failed call). Internal to
// src/core.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <queue>
#include <set>
#include <string>
#include <vector>

#include "core/executor.h"
#include "core/peer_watch.h"

namespace efacoll {
namespace exec {

class Executor;

struct OpSlot : Completion {
  Executor* executor = nullptr;
  uint32_t index = 0;
  bool posted = false;
  bool network = false, is_recv = false;
  bool cancel_asked = false;  // by a failed call's cleanup: its error is not the link's
};

class Executor {
 public:
  Executor(const Schedule& s, const ExecContext& ctx, const ExecBuffers& bufs)
      : s_(s),
        ctx_(ctx),
        bufs_(bufs),
        deps_(s.num_deps),
        slots_(new OpSlot[s.ops.size()]),
        watch_(s, ctx),
        look_every_(std::clamp<std::chrono::milliseconds>(
            ctx.timeout / 16, std::chrono::milliseconds(1), std::chrono::milliseconds(100))) {
    if (ctx.transport->info().quirks.needs_posting_order) order_lanes();
    // Taking part only so that the peers stop: the mismatch is known from the start.
    if (ctx.signature == kPoisonSignature) {
      same_shape_ = false;
      mismatch_ = Status(Code::kMismatch, ctx.what +
                                              ": an earlier phase of this call failed on this "
                                              "rank; it takes part only so that its peers stop");
    }
  }

  Status run();

 private:
  void order_lanes();
  bool held_behind_lane(uint32_t index);
  void lane_posted(uint32_t index);
  static void on_complete(Completion* c, const Status& status, size_t bytes);
  void finish(uint32_t index, const Status& status, size_t bytes);
  Status start(uint32_t index);
  Status issue(const Op& op, OpSlot* slot);
  bool on_gpu(BufId id) const;
  void release(uint32_t index);
  Status fail_with_cleanup(Status error);
  unsigned late_write_targets() const;  // ExecContext::late_write_targets
  Status op_error(const Op& op, const Status& status) const;
  Status in_context(const Status& status) const;
  std::string earliest_posted_step() const;
  std::string timeout_message() const;
  bool mismatched(const Op& op, const OpSlot& slot, const Status& status, size_t bytes);
  std::set<int> schedule_peers() const;
  std::set<int> posted_peers(OpKind kind) const;
  std::set<int> turned_away_peers() const;
  void look_at_peers(std::chrono::milliseconds waited);
  void settle_watch();

  uint8_t* resolve(const BufRef& ref) const;
  const MemRegion* region_of(BufId id) const;

  const Schedule& s_;
  const ExecContext& ctx_;
  const ExecBuffers& bufs_;
  std::vector<uint32_t> deps_;
  std::unique_ptr<OpSlot[]> slots_;
  // Lowest index first: schedules list earlier steps first, so receives are posted in order.
  std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<uint32_t>> ready_;
  std::vector<uint32_t> deferred_;
  // The (peer, direction) lanes a full queue turned an operation away from in this pass: the
  // later operations of that lane wait behind it, so that each peer gets its messages (and its
  // receives) in schedule order. A provider that answers a sender strictly in order (shm: one
  // response queue per sender) otherwise let a later step's message, unexpected at the
  // receiver, hold back the completions of everything sent after it; the sends the receiver
  // still waited for then found no posting slot, and the ring stalled for good.
  static constexpr uint64_t kNoLane = UINT64_MAX;
  static uint64_t lane_of(const Op& op) {
    if (op.kind != OpKind::kSend && op.kind != OpKind::kRecv) return kNoLane;
    return static_cast<uint64_t>(op.peer) * 2 + (op.kind == OpKind::kRecv ? 1 : 0);
  }
  std::set<uint64_t> turned_away_;
  // Where the transport's provider needs_posting_order (ProviderQuirks): each send or receive's
  // predecessor in its lane (kNoOp: none) and successor, whether it has been posted, and whether it
  // is ready but held until its predecessor is. Schedules list each peer's sends in the order that
  // peer lists its receives (ScheduleInvariants), so both ends then post in one order whatever the
  // timing.
  static constexpr uint32_t kNoOp = UINT32_MAX;
  std::vector<uint32_t> lane_prev_, lane_next_;
  std::vector<bool> lane_posted_, held_;
  size_t done_ = 0;
  bool unflushed_ = false;  // a receive landed in GPU memory since the last flush
  Status flush_if_needed();
  size_t answered_ = 0;  // receives and local operations completed
  size_t in_flight_ = 0;
  // Sends and receives in flight, each bounded by ctx_.max_posted. Separately: receives that
  // fill the queue must never keep out the sends that peers' receives wait for.
  size_t posted_[2] = {0, 0};
  Status error_;
  // The first mismatch found (kMismatch). The schedule still runs to its end, its later sends
  // marked as poison, so that every peer waiting on this rank learns of it at once and no
  // message is left behind; should it stall between calls of other shapes, the rank gives up
  // and sends notices instead.
  Status mismatch_;
  // Whether every mismatch seen so far changes no message (call_signature.h, same_shape): then
  // every message of the schedule still comes, and the rank waits for them as for any call
  // (up to the timeout) instead of giving up after two looks. Giving up there stranded a peer
  // late to the call: where no notice reaches it (shm) it waited out its timeout, and the
  // giving-up rank's untaken messages, which shm completes in order, failed the next call too.
  bool same_shape_ = true;
  // Peers a send or receive of this call failed with (a message too long for its receive among
  // them): the link may have dropped, and the notice with it (PeerWatch::tell_again_later).
  std::set<int> links_in_doubt_;
  // While nothing arrives: looks for messages of another call and for peers' notices.
  PeerWatch watch_;
  const std::chrono::milliseconds look_every_;
};

}  // namespace exec
}  // namespace efacoll

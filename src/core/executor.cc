#include "core/executor.h"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <queue>
#include <set>

#include "common/kept_alive.h"
#include "common/log.h"
#include "core/call_signature.h"
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

namespace {

class Executor;

struct OpSlot : Completion {
  Executor* executor = nullptr;
  uint32_t index = 0;
  bool posted = false;
  bool network = false, is_recv = false;
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
  size_t done_ = 0;
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
  // While nothing arrives: looks for messages of another call and for peers' notices.
  PeerWatch watch_;
  const std::chrono::milliseconds look_every_;
};

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

// A message from a rank in another call: a signature that differs (or poison), a length that
// differs, or a message too long for its receive. Noted once; the operation then counts as done.
bool Executor::mismatched(const Op& op, const OpSlot& slot, const Status& status, size_t bytes) {
  std::string why;
  const uint32_t theirs = tag_signature(slot.tag);  // a receive's: as sent, or as posted
  if (status.code() == Code::kTruncate && op.kind == OpKind::kRecv && theirs != ctx_.signature &&
      !is_poison(theirs)) {
    // Too long, and of another call: the call says more than the length.
    why = describe_mismatch(ctx_.signature, theirs, op.peer);
  } else if (status.code() == Code::kTruncate) {
    why = "rank " + std::to_string(op.peer) +
          (op.kind == OpKind::kSend ? " expects another length than this call sends ("
                                    : " sent more than this call expects (") +
          status.message() + "): a different count there";
  } else if (!status.is_ok()) {
    return false;
  } else if (theirs != ctx_.signature) {
    // A two-sided send reports its own tag: poison there is ours, already noted.
    if (op.kind == OpKind::kSend && is_poison(theirs)) return true;
    why = describe_mismatch(ctx_.signature, theirs, op.peer);
  } else if (op.kind == OpKind::kRecv && bytes != op.bytes) {
    why = "expected " + std::to_string(op.bytes) + " bytes from rank " + std::to_string(op.peer) +
          ", got " + std::to_string(bytes) + ": a different count there";
  } else {
    return false;
  }
  // Only here, past every message that matched: the check stays off the completions' path.
  same_shape_ = same_shape_ && status.is_ok() && bytes == op.bytes &&
                (theirs == kSameShapePoisonSignature || same_shape(ctx_.signature, theirs));
  if (mismatch_.is_ok()) {
    mismatch_ = Status(Code::kMismatch, ctx_.what + ": step " + std::to_string(op.step) + ": " +
                                            why + " (every rank must make the same call)");
  }
  return true;
}

void Executor::finish(uint32_t index, const Status& status, size_t bytes) {
  const Op& op = s_.ops[index];
  const bool network = op.kind == OpKind::kSend || op.kind == OpKind::kRecv;
  if (network && mismatched(op, slots_[index], status, bytes)) {
    // Counted as done below: the data is not trusted, the schedule goes on.
  } else if (!status.is_ok() && error_.is_ok()) {
    error_ = op_error(op, status);
  }
  ++done_;
  release(index);
}

// A failure no single operation owns (progress itself failed), placed at the earliest step
// still in flight.
Status Executor::in_context(const Status& status) const {
  return Status(status.code(),
                ctx_.what + ": step " + earliest_posted_step() + ": " + status.message());
}

// The step of the earliest operation still in flight, else of one the provider turned away
// ("?" when there is neither).
std::string Executor::earliest_posted_step() const {
  uint32_t step = UINT32_MAX;
  for (size_t i = 0; i < s_.ops.size(); ++i) {
    if (slots_[i].posted) step = std::min(step, s_.ops[i].step);
  }
  if (step == UINT32_MAX) {
    for (uint32_t index : deferred_) step = std::min(step, s_.ops[index].step);
  }
  return step == UINT32_MAX ? std::string("?") : std::to_string(step);
}

// The peers of the sends and receives the provider turned away in the last pass (queue full).
std::set<int> Executor::turned_away_peers() const {
  std::set<int> peers;
  for (uint32_t index : deferred_) {
    const Op& op = s_.ops[index];
    if (op.kind == OpKind::kSend || op.kind == OpKind::kRecv) peers.insert(op.peer);
  }
  return peers;
}

// An operation's failure, whether at posting or at completion, said with the collective, the
// communicator, the step and the peer.
Status Executor::op_error(const Op& op, const Status& status) const {
  std::string what = "local copy";
  if (op.kind == OpKind::kSend) what = "send to rank " + std::to_string(op.peer);
  if (op.kind == OpKind::kRecv) what = "receive from rank " + std::to_string(op.peer);
  if (op.kind == OpKind::kReduce) what = "local reduction";
  return Status(status.code(), ctx_.what + ": step " + std::to_string(op.step) + " " + what + ": " +
                                   status.message());
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
      return op.kind == OpKind::kSend ? ctx_.transport->send(peer, resolve(op.src), op.bytes, tag,
                                                             region_of(op.src.buf), slot)
                                      : ctx_.transport->recv(peer, resolve(op.dst), op.bytes, tag,
                                                             region_of(op.dst.buf), slot);
    }
    case OpKind::kReduce:
      return ctx_.local->reduce(resolve(op.dst), resolve(op.src), resolve(op.src2),
                                op.bytes / dtype_size(ctx_.dtype), ctx_.dtype, ctx_.op, slot);
    case OpKind::kCopy: {
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

// The peers of this call's posted operations of one kind (receives: the ranks we wait for).
std::set<int> Executor::posted_peers(OpKind kind) const {
  std::set<int> peers;
  for (size_t i = 0; i < s_.ops.size(); ++i) {
    if (slots_[i].posted && s_.ops[i].kind == kind) peers.insert(s_.ops[i].peer);
  }
  return peers;
}

std::string Executor::timeout_message() const {
  std::set<int> silent = posted_peers(OpKind::kRecv);
  const std::set<int> unacked = posted_peers(OpKind::kSend);
  // Only sends left (a link that went down): their peers are the ones that did not answer.
  const bool sends_only = silent.empty() && !unacked.empty();
  if (sends_only) silent = unacked;
  // Nothing posted at all: the provider kept turning our operations for these peers away (a
  // one-sided receive's clear-to-send to a killed peer over tcp;ofi_rxm: its queue stays full).
  const bool turned_away = silent.empty();
  if (turned_away) silent = turned_away_peers();
  std::string ranks;
  for (int r : silent) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
  if (sends_only) ranks += " (did not take our sends)";
  if (turned_away && !ranks.empty())
    ranks += " (the provider would not take our operations for them)";
  if (!mismatch_.is_ok())
    return mismatch_.message() + "; then no progress for " +
           std::to_string(ctx_.timeout.count() / 1000) + " s (EFACOLL_TIMEOUT), waiting on ranks " +
           ranks;
  return ctx_.what + ": no progress for " + std::to_string(ctx_.timeout.count() / 1000) +
         " s (EFACOLL_TIMEOUT) at step " + earliest_posted_step() +
         "; ranks that did not answer: " + (ranks.empty() ? std::string("none pending") : ranks);
}

std::set<int> Executor::schedule_peers() const {
  std::set<int> peers;
  for (const Op& op : s_.ops) {
    if (op.kind == OpKind::kSend || op.kind == OpKind::kRecv) peers.insert(op.peer);
  }
  return peers;
}

// The ranks whose messages we wait for, and, for a one-sided protocol, clear-to-sends.
void Executor::look_at_peers(std::chrono::milliseconds waited) {
  watch_.look(posted_peers(OpKind::kRecv),
              ctx_.transport->info().rdma && !posted_peers(OpKind::kSend).empty(), waited);
}

// Looks still in flight finish before the executor is gone (a peek completes at once).
void Executor::settle_watch() {
  watch_.withdraw_cards();
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  IdleBackoff backoff;
  while (watch_.in_flight() > 0 && std::chrono::steady_clock::now() < until) {
    int n = 0;
    if (!ctx_.transport->progress(&n).is_ok()) break;
    if (n == 0) backoff.idle();
  }
  if (watch_.in_flight() > 0) watch_.abandon();
}

Status Executor::fail_with_cleanup(Status error) {
  // A mismatch found first is the cause; what failed after it (tcp;ofi_rxm drops a connection
  // that delivered a message too long for its receive) only follows from it.
  if (!mismatch_.is_ok() && error.code() != Code::kMismatch)
    error = Status(Code::kMismatch, mismatch_.message() + "; then: " + error.message());
  // Peers waiting on this rank learn at once that it gives up, not at their own timeouts.
  int silent = -1;
  if (error.code() == Code::kTimeout && watch_.found().is_ok()) {
    const std::set<int> waited = posted_peers(OpKind::kRecv);
    if (!waited.empty()) silent = *waited.begin();  // the first its own message names
  }
  watch_.tell(schedule_peers(), give_up_reason(error.code()), silent);
  watch_.withdraw_cards();
  for (size_t i = 0; i < s_.ops.size(); ++i) {
    const OpKind k = s_.ops[i].kind;
    if (slots_[i].posted && (k == OpKind::kSend || k == OpKind::kRecv)) {
      ctx_.transport->cancel(&slots_[i]);
    }
  }
  // Wait for the cancellations, so that no buffer is written after we return.
  const auto now = std::chrono::steady_clock::now();
  const auto drain_until = now + std::chrono::seconds(5);
  // Cancellations complete at once; what is left after that is sends, which only read our
  // buffers and which some providers cannot cancel (tcp;ofi_rxm keeps those to a peer that died
  // queued forever), or, after a timeout, operations silent for EFACOLL_TIMEOUT already
  // (udp;ofi_rxd cannot cancel a receive it has begun to match). Waiting on them would only
  // delay the error past the timeout.
  const auto short_until = now + std::chrono::milliseconds(100);
  const bool timed_out = error.code() == Code::kTimeout;
  IdleBackoff backoff;
  // The notices need the provider's progress to leave (udp;ofi_rxd sends only then, and the
  // process may exit right after the error): short_until at the least.
  while ((in_flight_ > 0 || watch_.in_flight() > 0 || watch_.telling() ||
          std::chrono::steady_clock::now() < short_until) &&
         std::chrono::steady_clock::now() < drain_until) {
    watch_.retell();
    if ((timed_out || in_flight_ == posted_[0]) && std::chrono::steady_clock::now() > short_until)
      break;
    int n = 0, m = 0;
    if (!ctx_.transport->progress(&n).is_ok() || !ctx_.local->progress(&m).is_ok()) break;
    if (n + m == 0) backoff.idle();
  }
  if (watch_.telling() && ctx_.late_sends)
    watch_.hand_off_untold(ctx_.late_sends, std::chrono::steady_clock::now() + ctx_.timeout);
  if (ctx_.late_write_targets) *ctx_.late_write_targets |= late_write_targets();
  if (in_flight_ > 0) {
    // The provider still holds our slots: keep them alive rather than let it write freed memory,
    // and let their late completions go nowhere (this executor is about to be gone).
    for (size_t i = 0; i < s_.ops.size(); ++i)
      slots_[i].fn = [](Completion*, const Status&, size_t) {};
    EFACOLL_WARN(kNet, "%s: %zu operations could not be canceled", ctx_.what.c_str(), in_flight_);
    keep_alive(std::move(slots_));
  }
  if (watch_.in_flight() > 0) watch_.abandon();
  return error;
}

unsigned Executor::late_write_targets() const {
  unsigned bits = 0;
  for (size_t i = 0; i < s_.ops.size(); ++i) {
    if (s_.ops[i].kind != OpKind::kRecv) continue;
    if (slots_[i].posted || slots_[i].may_still_be_written)
      bits |= 1u << static_cast<unsigned>(s_.ops[i].dst.buf);
  }
  return bits;
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
      if (!st.is_ok()) error_ = op_error(s_.ops[index], st);
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
  return error_.is_ok() ? mismatch_ : error_;
}

}  // namespace

Status execute_schedule(const Schedule& schedule, const ExecContext& ctx, const ExecBuffers& bufs) {
  Executor executor(schedule, ctx, bufs);
  return executor.run();
}

}  // namespace efacoll

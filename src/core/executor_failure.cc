// How a call fails: a message of another call (mismatch), a timeout named with the step and the
// ranks that did not answer, and the cleanup that leaves no operation behind that could still
// write our buffers unannounced.
#include <algorithm>
#include <set>
#include <string>

#include "common/kept_alive.h"
#include "common/log.h"
#include "core/call_signature.h"
#include "core/executor_state.h"
#include "core/late_sends.h"
#include "transport/tag.h"

namespace efacoll {
namespace exec {

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
      slots_[i].cancel_asked = true;
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
  if (watch_.telling() && ctx_.late_sends) {
    const std::chrono::steady_clock::duration tried =
        std::max<std::chrono::steady_clock::duration>(ctx_.timeout, LateSends::kTriedAtLeast);
    watch_.hand_off_untold(ctx_.late_sends, std::chrono::steady_clock::now() + tried);
  }
  // After the drain, which may have failed more of them.
  if (ctx_.late_sends) watch_.tell_again_later(links_in_doubt_, ctx_.late_sends);
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

}  // namespace exec
}  // namespace efacoll

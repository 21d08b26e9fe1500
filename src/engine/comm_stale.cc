// Messages a failed call leaves behind. Ranks of another shape send messages that no receive of
// theirs ever takes; a rank that gives up cancels its receives while peers' messages are still
// on the way. They wait in the provider's queue with the call's sequence in their tags, which
// holds 6 bits: 64 calls later a call of the same shape would take them for its own and return
// old data. So once a call fails, its sequence is remembered, and half way round (32 calls on,
// when every message of it has long arrived and no peer can yet be in the call that reuses it)
// what is queued under it is taken and dropped. A receiver's clear-to-send among them is
// answered (answer_stale), so that the receiver frees what it retired for that write.
// Providers that cannot peek (shm 1.17) keep them: a receive for any message of the call cannot
// stand in for the look there, since such a provider matches a message that came first on its
// whole tag, ignore mask or not (transport/fabric/fabric_tags.cc; tried: none was taken).
#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/kept_alive.h"
#include "common/log.h"
#include "core/executor.h"
#include "engine/comm_core.h"
#include "engine/engine_core.h"
#include "transport/tag.h"
#include "transport/transport.h"

namespace efacoll {
namespace {

constexpr size_t kMaxFailedKept = kTagSeqValues;
constexpr int kMaxDropped = 100000;  // a bound, far above what one call sends a rank

// One operation of this file, with the buffer the provider may fill for it. Held by pointer: one
// the provider never gives back is kept alive with its buffer (common/kept_alive.h).
struct StaleOp : Completion {
  bool done = false;
  bool cancel_asked = false;
  Status status;
  size_t bytes = 0;
  std::vector<uint8_t> buffer;
  MemRegion region;
  bool registered = false;
  static void on_done(Completion* c, const Status& st, size_t bytes) {
    auto* op = static_cast<StaleOp*>(c);
    op->done = true;
    op->status = st;
    op->bytes = bytes;
  }
  StaleOp() { fn = &StaleOp::on_done; }
};
using StaleOpPtr = std::unique_ptr<StaleOp>;

Status progress_until(Transport* t, StaleOp* op, std::chrono::steady_clock::time_point until) {
  IdleBackoff backoff;
  while (!op->done && std::chrono::steady_clock::now() < until) {
    int n = 0;
    EFACOLL_RETURN_IF_ERROR(t->progress(&n));
    if (n == 0 && !op->done) backoff.idle();
  }
  return Status::ok();
}

// Waits `timeout` for the operation; one still posted then is canceled and waited for as long
// again, until the provider gives it back (having maybe completed it after all: cancel_asked
// tells). One it never gives back, or one whose progress failed, is left to it, kept alive,
// and `op` is then empty.
Status finish(Transport* t, StaleOpPtr& op, std::chrono::milliseconds timeout) {
  Status st = progress_until(t, op.get(), std::chrono::steady_clock::now() + timeout);
  if (st.is_ok() && op->done) return Status::ok();
  if (st.is_ok()) {
    op->cancel_asked = true;
    t->cancel(op.get());
    st = progress_until(t, op.get(), std::chrono::steady_clock::now() + timeout);
    if (st.is_ok() && op->done) return Status::ok();
  }
  op->registered = false;  // the provider may still use it: kept open
  keep_alive(std::move(op));
  return st.is_ok()
             ? Status(Code::kTimeout, "the provider kept an operation it was asked to cancel")
             : st;
}

// What a finished look or take found. One that failed after its cancel was asked ran out of
// time; one that ended as its cancel came counts by what it found, as one that ended in time.
Status outcome(const StaleOp& op, const char* late) {
  if (!op.status.is_ok() && op.cancel_asked) return Status(Code::kTimeout, late);
  return op.status;
}

void release(Transport* t, StaleOp* op) {
  if (op->registered) t->deregister_memory(&op->region);
  op->registered = false;
}

// One message queued from a sender under a failed call's tag, into `*taken` (left empty: none
// left): a look says how long it is, then a receive of that length takes it.
Status take_one(Transport* t, PeerAddr peer, uint64_t tag, uint32_t seq,
                std::chrono::milliseconds timeout, StaleOpPtr* taken) {
  const TransportInfo& info = t->info();
  auto look = std::make_unique<StaleOp>();
  EFACOLL_RETURN_IF_ERROR(t->peek(peer, tag, kSignatureMask | kMaxMsgIdInTag, look.get()));
  EFACOLL_RETURN_IF_ERROR(finish(t, look, timeout));
  if (look->status.code() == Code::kAgain) return Status::ok();  // none left
  EFACOLL_RETURN_IF_ERROR(outcome(*look, "the provider did not end a look in time"));
  // Above the one-sided threshold a receive would ask for the data instead of taking it.
  if (info.rdma && look->bytes >= info.rdma_threshold) {
    return Status(Code::kInternal, "a message of " + std::to_string(look->bytes) +
                                       " bytes cannot be taken by a plain receive");
  }
  auto take = std::make_unique<StaleOp>();
  take->buffer.resize(std::max<size_t>(look->bytes, 1));
  take->call_seq = seq;
  // Registered where the provider wants local registrations (EFA: FI_MR_LOCAL).
  if (info.needs_registration()) {
    EFACOLL_RETURN_IF_ERROR(t->register_memory(take->buffer.data(), take->buffer.size(),
                                               MemKind::kHost, -1, &take->region));
    take->registered = true;
  }
  Status st = t->recv(peer, take->buffer.data(), look->bytes, look->tag,
                      take->registered ? &take->region : nullptr, take.get());
  if (st.is_ok()) st = finish(t, take, timeout);
  if (!take) return st;  // left to the provider
  release(t, take.get());
  EFACOLL_RETURN_IF_ERROR(st);
  EFACOLL_RETURN_IF_ERROR(outcome(*take, "a message the look showed never came"));
  *taken = std::move(take);
  return Status::ok();
}

}  // namespace

void CommCore::remember_failed_call(uint32_t seq) {
  if (failed_seqs_.size() >= kMaxFailedKept) failed_seqs_.erase(failed_seqs_.begin());
  failed_seqs_.push_back(seq);
}

void CommCore::drop_stale_messages() {
  for (auto it = failed_seqs_.begin(); it != failed_seqs_.end();) {
    if (seq_ - *it < kTagSeqValues / 2) {
      ++it;
      continue;
    }
    Status st = drop_messages_of(*it);
    if (!st.is_ok()) {
      EFACOLL_WARN(kNet, "communicator %u: messages left by failed call %u not dropped: %s", id_,
                   *it, st.message().c_str());
    }
    it = failed_seqs_.erase(it);
  }
}

// A clear-to-send among them asks for data this rank will never write: answered, its receiver
// can free the memory it retired for that write (comm_late_writes.cc).
bool CommCore::answer_stale(const void* message, size_t bytes) {
  Transport* t = engine_->transport();
  const std::chrono::milliseconds timeout = engine_->config().timeout;
  auto answer = std::make_unique<StaleOp>();
  Status st = t->answer_stale(message, bytes, peers_, answer.get());
  if (st.code() == Code::kUnsupported) return false;
  if (st.is_ok()) st = finish(t, answer, timeout);
  if (st.is_ok()) st = answer->status;
  if (!st.is_ok()) {
    EFACOLL_WARN(kNet, "communicator %u: a clear-to-send a failed call left was not answered: %s",
                 id_, st.message().c_str());
  }
  return st.is_ok();
}

Status CommCore::drop_messages_of(uint32_t seq) {
  Transport* t = engine_->transport();
  const std::chrono::milliseconds timeout = engine_->config().timeout;
  int dropped = 0, answered = 0;
  // Tagged by each sender; a clear-to-send carries the rank of the data's sender: this one.
  for (int sender = 0; sender < size_; ++sender) {
    while (dropped < kMaxDropped) {
      StaleOpPtr taken;
      Status st =
          take_one(t, peers_[sender], make_tag(id_, seq, sender, 0, 0), seq, timeout, &taken);
      if (st.code() == Code::kUnsupported) return Status::ok();  // nothing to be done here
      EFACOLL_RETURN_IF_ERROR(st);
      if (!taken) break;  // none left
      ++dropped;
      if (answer_stale(taken->buffer.data(), taken->bytes)) ++answered;
    }
  }
  if (dropped > 0) {
    EFACOLL_INFO(
        kNet, "communicator %u: dropped %d messages left by failed call %u%s", id_, dropped, seq,
        answered > 0
            ? (", answered the " + std::to_string(answered) + " clear-to-sends among them").c_str()
            : "");
  }
  return Status::ok();
}

}  // namespace efacoll

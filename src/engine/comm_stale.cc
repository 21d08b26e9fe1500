// Messages a failed call leaves behind. Ranks of another shape send messages that no receive of
// theirs ever takes; a rank that gives up cancels its receives while peers' messages are still
// on the way. They wait in the provider's queue with the call's sequence in their tags, which
// holds 6 bits: 64 calls later a call of the same shape would take them for its own and return
// old data. So once a call fails, its sequence is remembered, and half way round (32 calls on,
// when every message of it has long arrived and no peer can yet be in the call that reuses it)
// what is queued under it is taken and dropped. Providers that cannot peek (shm) keep them.
// A receiver's clear-to-send among them is answered (answer_stale).
#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "common/log.h"
#include "core/executor.h"
#include "efacoll/engine.h"
#include "transport/tag.h"
#include "transport/transport.h"

namespace efacoll {
namespace {

constexpr size_t kMaxFailedKept = kTagSeqValues;
constexpr int kMaxDropped = 100000;  // a bound, far above what one call sends a rank

// One operation of this file, run to its end: progress until the callback came.
struct Waited : Completion {
  bool done = false;
  Status status;
  size_t bytes = 0;
  static void on_done(Completion* c, const Status& st, size_t bytes) {
    auto* w = static_cast<Waited*>(c);
    w->done = true;
    w->status = st;
    w->bytes = bytes;
  }
  Waited() { fn = &Waited::on_done; }
};

Status wait(Transport* t, Waited* w, std::chrono::milliseconds timeout) {
  IdleBackoff backoff;
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (!w->done) {
    int n = 0;
    EFACOLL_RETURN_IF_ERROR(t->progress(&n));
    if (w->done || n > 0) continue;
    if (std::chrono::steady_clock::now() > until) {
      t->cancel(w);
      return Status(Code::kTimeout, "the provider did not complete a look or a receive");
    }
    backoff.idle();
  }
  return Status::ok();
}

}  // namespace

void Comm::remember_failed_call(uint32_t seq) {
  if (failed_seqs_.size() >= kMaxFailedKept) failed_seqs_.erase(failed_seqs_.begin());
  failed_seqs_.push_back(seq);
}

void Comm::drop_stale_messages() {
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
bool Comm::answer_stale(const void* message, size_t bytes) {
  Transport* t = engine_->transport_.get();
  Waited answer;
  Status st = t->answer_stale(message, bytes, peers_, &answer);
  if (st.code() == Code::kUnsupported) return false;
  if (st.is_ok()) st = wait(t, &answer, engine_->config_.timeout);
  if (st.is_ok()) st = answer.status;
  if (!st.is_ok()) {
    EFACOLL_WARN(kNet, "communicator %u: a clear-to-send a failed call left was not answered: %s",
                 id_, st.message().c_str());
  }
  return st.is_ok();
}

Status Comm::drop_messages_of(uint32_t seq) {
  Transport* t = engine_->transport_.get();
  const TransportInfo& info = t->info();
  const uint64_t any = kSignatureMask | kMaxMsgIdInTag;
  const std::chrono::milliseconds timeout = engine_->config_.timeout;
  std::vector<uint8_t> sink;
  int dropped = 0, answered = 0;
  // Tagged by each sender; a clear-to-send carries the rank of the data's sender: this one.
  for (int sender = 0; sender < size_; ++sender) {
    while (dropped < kMaxDropped) {
      Waited look;
      Status st = t->peek(peers_[sender], make_tag(id_, seq, sender, 0, 0), any, &look);
      if (st.code() == Code::kUnsupported) return Status::ok();  // nothing to be done here
      EFACOLL_RETURN_IF_ERROR(st);
      EFACOLL_RETURN_IF_ERROR(wait(t, &look, timeout));
      if (look.status.code() == Code::kAgain) break;  // none left
      EFACOLL_RETURN_IF_ERROR(look.status);
      // Above the one-sided threshold a receive would ask for the data instead of taking it.
      if (info.rdma && look.bytes >= info.rdma_threshold) {
        return Status(Code::kInternal, "a message of " + std::to_string(look.bytes) +
                                           " bytes cannot be taken by a plain receive");
      }
      sink.resize(std::max<size_t>({sink.size(), look.bytes, size_t{1}}));
      // Registered where the provider wants local registrations (EFA: FI_MR_LOCAL).
      MemRegion mr;
      const MemRegion* region = nullptr;
      if (info.needs_registration()) {
        EFACOLL_RETURN_IF_ERROR(
            t->register_memory(sink.data(), sink.size(), MemKind::kHost, -1, &mr));
        region = &mr;
      }
      Waited take;
      take.ignore = 0;
      st = t->recv(peers_[sender], sink.data(), look.bytes, look.tag, region, &take);
      if (st.is_ok()) st = wait(t, &take, timeout);
      if (region) t->deregister_memory(&mr);
      EFACOLL_RETURN_IF_ERROR(st);
      ++dropped;
      if (answer_stale(sink.data(), take.bytes)) ++answered;
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

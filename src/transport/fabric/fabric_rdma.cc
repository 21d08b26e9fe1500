// The one-sided protocol for large messages, as aws-ofi-nccl's RDMA protocol on p5: the receiver
// sends the sender a clear-to-send (address, key, completion id) tagged like the data message
// itself; the sender writes the data with fi_writedata; the receiver learns of it from the
// remote CQ data (4 bytes: all EFA guarantees). Nothing here relies on ordering: the data is
// valid once its completion is read, never earlier.
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/log.h"
#include "transport/fabric/fabric_endpoint.h"
#include "transport/tag.h"

namespace efacoll {
namespace {

// FI_OPT_EFA_EMULATED_WRITE (libfabric >= 1.18; an enum value, so no #ifdef can see it).
constexpr int kOptEfaEmulatedWrite = -(0xefa << 16) + 2;

// The 4 bytes of remote CQ data: the receiver's completion id, and the sender's call signature
// (tag.h), which a written message cannot carry in a tag.
constexpr uint32_t kCompletionIdBits = 32 - kSignatureBits;
constexpr uint32_t kCompletionIdMask = (1u << kCompletionIdBits) - 1;

}  // namespace

Status FabricTransport::choose_protocol(const fi_info* fi, const FabricOptions& options) {
  std::string why_not;
  if (!(fi->caps & FI_RMA)) {
    why_not = "no FI_RMA";
  } else if (fi->domain_attr->mr_key_size > sizeof(uint64_t)) {
    why_not = "memory keys longer than 8 bytes";
  } else if (fi->domain_attr->cq_data_size < sizeof(uint32_t)) {
    why_not = "less than 4 bytes of remote CQ data";
  } else if (info_.inject_size < sizeof(ClearToSend)) {
    why_not = "inject size below a clear-to-send message";
  }
  bool native_write = false;
  if (why_not.empty() && info_.provider == "efa") {
    bool emulated = true;
    size_t len = sizeof(emulated);
    // Absent before 1.18, where EFA emulates every write.
    native_write =
        fi_getopt(&ep_.get()->fid, FI_OPT_ENDPOINT, kOptEfaEmulatedWrite, &emulated, &len) == 0 &&
        !emulated;
  }
  switch (options.protocol) {
    case Protocol::kSendRecv:
      info_.rdma = false;
      break;
    case Protocol::kRdma:
      if (!why_not.empty()) {
        return Status(Code::kUnsupported, "EFACOLL_PROTOCOL=rdma, but provider " + info_.provider +
                                              " cannot carry it: " + why_not);
      }
      info_.rdma = true;
      break;
    case Protocol::kAuto:
      // Where a message longer than its receive stops the provider (shm 1.17), a call of
      // another count must never send one: writes fit the receiver's clear-to-send, and the
      // messages left two-sided land in bounce buffers (fabric_bounce.cc).
      info_.rdma = native_write || (info_.quirks.truncation_stops && why_not.empty());
      break;
  }
  info_.rdma_threshold = options.rdma_threshold;
  if (options.protocol == Protocol::kAuto && info_.rdma && !native_write) {
    // And shm completes a longer message's send only once its receiver takes it, in order: one
    // that a call of another shape never takes would hold back every later send to that rank,
    // and the next call would time out. An injected send completes at once; a longer message
    // is written, at a clear-to-send of its own call.
    info_.rdma_threshold = std::min(info_.rdma_threshold, info_.inject_size + 1);
  }
  EFACOLL_INFO(kNet, "protocol: %s%s%s", info_.rdma ? "one-sided RDMA write" : "two-sided tagged",
               info_.rdma ? (" from " + std::to_string(info_.rdma_threshold) + " B").c_str() : "",
               why_not.empty() ? "" : (" (no RDMA: " + why_not + ")").c_str());
  return Status::ok();
}

Status FabricTransport::rdma_send(PeerAddr peer, const void* buf, size_t bytes, uint64_t tag,
                                  const MemRegion* region, Completion* completion) {
  if (region == nullptr) return Status(Code::kInternal, "one-sided send of an unregistered buffer");
  Request* r = get_request(completion, bytes, ReqKind::kAwaitCts);
  r->buf = buf;
  r->desc = region->desc;
  r->peer = peer;
  r->truncated = false;
  completion->tag = r->tag = tag;
  ssize_t rc = post_trecv(&r->cts, sizeof(ClearToSend), r->cts_desc, tag, completion->ignore,
                          completion->call_seq, r);
  if (rc == 0) return Status::ok();
  put_request(r);
  if (rc == -FI_EAGAIN) return Status(Code::kAgain, "rx queue full");
  return fabric_error("fi_trecv(clear-to-send)", static_cast<int>(rc));
}

Status FabricTransport::on_clear_to_send(Request* r) {
  // A receiver that expects another length is in another call: it still gets what fits, marked
  // as such, so that it stops instead of waiting and says why.
  if (r->cts.bytes != r->bytes) {
    r->truncated = true;
    r->own_bytes = r->bytes;
    r->bytes = std::min<size_t>(r->bytes, r->cts.bytes);
  }
  r->kind = ReqKind::kWrite;
  return post_write(r);
}

Status FabricTransport::post_write(Request* r) {
  const uint32_t signature = r->truncated ? kShortWriteSignature : tag_signature(r->tag);
  const uint64_t data = (r->cts.completion_id & kCompletionIdMask) |
                        (static_cast<uint64_t>(signature) << kCompletionIdBits);
  ssize_t rc;
  {
    ProviderClock::Scope timed(clock_, "fi_writedata");
    rc = fi_writedata(ep_.get(), r->buf, r->bytes, r->desc, data, r->peer, r->cts.addr, r->cts.key,
                      &r->context);
  }
  if (rc == 0) return Status::ok();
  if (rc == -FI_EAGAIN) {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_writes_.push_back(r);
    return Status::ok();
  }
  complete(r, fabric_error("fi_writedata", static_cast<int>(rc)), 0);
  return Status::ok();
}

Status FabricTransport::retry_writes() {
  std::deque<Request*> pending;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending.swap(pending_writes_);
  }
  for (Request* r : pending) EFACOLL_RETURN_IF_ERROR(post_write(r));
  return Status::ok();
}

Status FabricTransport::rdma_recv(PeerAddr peer, void* buf, size_t bytes, uint64_t tag,
                                  const MemRegion* region, Completion* completion) {
  if (region == nullptr)
    return Status(Code::kInternal, "one-sided receive into an unregistered buffer");
  Request* r = get_request(completion, bytes, ReqKind::kAwaitWrite);
  r->tag = tag;
  ClearToSend cts = {};
  const auto at = reinterpret_cast<uintptr_t>(buf);
  // Offset-based providers (tcp, udp) silently ignore a virtual address: send what they expect.
  cts.addr = (mr_mode_ & FI_MR_VIRT_ADDR) ? at : at - region->base;
  cts.key = fi_mr_key(static_cast<fid_mr*>(region->handle));
  cts.bytes = bytes;
  cts.receiver = kClearToSendMark | (completion->receiver_rank & kReceiverRankMask);
  cts.answer_addr = (mr_mode_ & FI_MR_VIRT_ADDR) ? answer_pad_->mr.base : 0;
  cts.answer_key = fi_mr_key(static_cast<fid_mr*>(answer_pad_->mr.handle));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Skips the ids of canceled receives whose writes may still come (cancel_awaited_write).
    do {
      next_completion_id_ = (next_completion_id_ + 1) & kCompletionIdMask;
    } while (next_completion_id_ == 0 || awaited_writes_.count(next_completion_id_) > 0);
    r->completion_id = cts.completion_id = next_completion_id_;
    awaited_writes_[cts.completion_id] = r;
  }
  ssize_t rc = post_tinject(&cts, sizeof(cts), peer, tag, completion->call_seq);
  if (rc == 0) return Status::ok();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    awaited_writes_.erase(cts.completion_id);
  }
  put_request(r);
  if (rc == -FI_EAGAIN) return Status(Code::kAgain, "tx queue full");
  return fabric_error("fi_tinject(clear-to-send)", static_cast<int>(rc));
}

void FabricTransport::on_remote_write(uint64_t data) {
  const uint32_t id = static_cast<uint32_t>(data) & kCompletionIdMask;
  const uint32_t signature = (data >> kCompletionIdBits) & ((1u << kSignatureBits) - 1);
  const bool no_data = signature == kNoDataSignature;
  Request* r = nullptr;
  bool known = false, in_flight = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = awaited_writes_.find(id);
    // An answer without data is for a canceled receive only: one in flight waits on for its data.
    in_flight = it != awaited_writes_.end() && no_data && it->second != nullptr;
    if (it != awaited_writes_.end() && !in_flight) {
      known = true;
      r = it->second;
      if (r == nullptr) --late_writes_awaited_;
      awaited_writes_.erase(it);
    }
  }
  if (r == nullptr) {
    if (in_flight) {
      EFACOLL_INFO(kNet,
                   "an answer without data came for a receive in flight (completion id %u): "
                   "ignored, it waits on for its data",
                   id);
    } else if (known && no_data) {
      // One per clear-to-send: its sender says how many it answered (comm_stale.cc).
      EFACOLL_TRACE(kNet,
                    "a clear-to-send of a failed call was answered: no write will come "
                    "(completion id %u)",
                    id);
    } else if (known) {
      EFACOLL_INFO(kNet,
                   "a write for a canceled receive arrived late (completion id %u): its buffer "
                   "was retired, nothing else changed",
                   id);
    } else {
      EFACOLL_WARN(kNet, "remote write with unknown completion id %u%s: ignored", id,
                   no_data ? " (an answer without data)" : "");
    }
    return;
  }
  r->completion->tag =
      (r->tag & ~kSignatureMask) | (static_cast<uint64_t>(signature) << kSignatureShift);
  complete(r, Status::ok(), r->bytes);
}

bool FabricTransport::cancel_awaited_write(Request* r) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = awaited_writes_.find(r->completion_id);
  if (it == awaited_writes_.end() || it->second != r) return false;
  // The sender may hold the clear-to-send already and write later, at any time (EFA keeps no
  // order): its id stays taken, so that its write completes no later receive, and the buffer's
  // owner is told not to reuse the buffer.
  it->second = nullptr;
  ++late_writes_awaited_;
  r->completion->may_still_be_written = true;
  return true;
}

Status FabricTransport::answer_stale(const void* message, size_t bytes,
                                     const std::vector<PeerAddr>& peers, Completion* completion) {
  ClearToSend cts;
  if (!info_.rdma || bytes != sizeof(cts)) return Status(Code::kUnsupported, "not a clear-to-send");
  std::memcpy(&cts, message, sizeof(cts));
  const uint32_t rank = cts.receiver & kReceiverRankMask;
  if ((cts.receiver & ~kReceiverRankMask) != kClearToSendMark || rank >= peers.size())
    return Status(Code::kUnsupported, "not a clear-to-send");
  Request* r = get_request(completion, sizeof(uint64_t), ReqKind::kWrite);
  r->cts = cts;
  r->cts.addr = cts.answer_addr;
  r->cts.key = cts.answer_key;
  r->buf = answer_pad_->words;
  r->desc = answer_pad_->mr.desc;
  r->peer = peers[rank];
  r->truncated = false;
  r->tag = static_cast<uint64_t>(kNoDataSignature) << kSignatureShift;
  completion->tag = r->tag;
  return post_write(r);
}

size_t FabricTransport::late_writes_awaited() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return late_writes_awaited_;
}

}  // namespace efacoll

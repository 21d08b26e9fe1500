// Bounce receives: shm reports a message longer than its receive, and then never sends to that
// receiver again (1.17: its senders spin forever on a lock the error path kept; 2.6: fi_cq_read
// never returns, and efacoll's watchdog ends the process at EFACOLL_TIMEOUT. A receive of 2000
// bytes met by 4096 is enough: FabricPair.AfterATruncationTheNextMessageStillArrives). Ranks in
// calls of other counts send exactly such messages. So no two-sided receive on shm is ever
// shorter than its message: it lands in a buffer as long as any message can be, then is copied
// out, a longer one reported as a truncation.
// - One-sided protocol (the default there): the writes fit the receiver's clear-to-send by
//   construction; only the messages below EFACOLL_RDMA_THRESHOLD are two-sided.
// - Two-sided protocol (EFACOLL_PROTOCOL=send, or an endpoint that cannot carry one-sided):
//   every message is capped at kTwoSidedBounceBytes (TransportInfo::max_msg_size, which the
//   engine's chunks respect), and so is every bounce buffer.
// A receive into GPU memory (FI_HMEM) cannot be copied out here, and goes straight to the provider:
// on shm's FI_HMEM endpoint a call of another count still stops shm (docs/decisions/0012-shm-one-sided-by-default-with-bounce-receives.md).
// (The stall once seen with bounces on shm was the executor's posting order: core/executor.cc.)
#include <rdma/fi_domain.h>
#include <rdma/fi_tagged.h>

#include <algorithm>
#include <cstring>

#include "transport/fabric/fabric_endpoint.h"

namespace efacoll {

// After choose_protocol: the providers a truncation stops bounce every two-sided message.
void FabricTransport::plan_bounce() {
  if (!info_.quirks.truncation_stops) return;
  if (info_.rdma) {
    bounce_bytes_ = info_.rdma_threshold - 1;
  } else {
    bounce_bytes_ = std::min(info_.max_msg_size, kTwoSidedBounceBytes);
    info_.max_msg_size = bounce_bytes_;
  }
}

bool FabricTransport::bounces(size_t bytes, const MemRegion* region) const {
  return bounce_bytes_ > 0 && bytes <= bounce_bytes_ && !(region != nullptr && region->on_gpu);
}

Status FabricTransport::bounce_recv(void* buf, size_t bytes, uint64_t tag, Completion* c) {
  Request* r = get_request(c, bytes, ReqKind::kBounceRecv);
  r->tag = tag;
  r->dest = buf;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_bounces_.empty()) {
      auto b = std::make_unique<Bounce>();
      b->mem.reset(new uint8_t[std::max<size_t>(1, bounce_bytes_)]);
      free_bounces_.push_back(b.get());
      bounces_.push_back(std::move(b));
    }
    r->bounce = free_bounces_.back();
    free_bounces_.pop_back();
  }
  Bounce* b = r->bounce;
  if (info_.needs_local_mr && b->mr == nullptr) {
    MemRegion region;
    Status st = register_memory(b->mem.get(), bounce_bytes_, MemKind::kHost, -1, &region);
    if (!st.is_ok()) {
      put_request(r);
      return st;
    }
    b->mr = static_cast<fid_mr*>(region.handle);
  }
  ssize_t rc = post_trecv(b->mem.get(), bounce_bytes_, b->mr ? fi_mr_desc(b->mr) : nullptr, tag,
                          c->ignore, c->call_seq, r);
  if (rc == 0) return Status::ok();
  put_request(r);
  if (rc == -FI_EAGAIN) return Status(Code::kAgain, "rx queue full");
  return fabric_error("fi_trecv", static_cast<int>(rc));
}

void FabricTransport::finish_bounce(Request* r, size_t len) {
  const size_t fits = std::min(len, r->bytes);
  if (fits > 0) std::memcpy(r->dest, r->bounce->mem.get(), fits);
  complete(r,
           len > r->bytes ? Status(Code::kTruncate, "message larger than its receive buffer")
                          : Status::ok(),
           fits);
}

void FabricTransport::release_bounce(Request* r) {
  if (r->bounce == nullptr) return;
  free_bounces_.push_back(r->bounce);
  r->bounce = nullptr;
}

void FabricTransport::free_bounces() {
  for (auto& b : bounces_) {
    if (b->mr) fi_close(&b->mr->fid);
  }
  bounces_.clear();
  free_bounces_.clear();
}

}  // namespace efacoll

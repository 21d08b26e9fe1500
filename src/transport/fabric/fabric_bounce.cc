// Bounce receives: shm (libfabric 1.17) reports a message longer than its receive, and then
// never sends to that receiver again (its senders spin forever on a lock the error path kept; a
// receive of 2000 bytes met by 4096 is enough:
// FabricPair.AfterATruncationTheNextMessageStillArrives). Ranks in calls of other counts send
// exactly such messages. With the one-sided protocol (EFACOLL_PROTOCOL=rdma), whose writes fit the
// receiver's clear-to-send by construction, the messages left two-sided (below
// EFACOLL_RDMA_THRESHOLD) land in a buffer as long as any of them can be, then are copied out, a
// longer one reported as a truncation: no receive is ever shorter than its message. The default
// there (EFACOLL_PROTOCOL=auto). (The stall once seen with it on shm was the executor's posting
// order: core/executor.cc.)
#include <rdma/fi_domain.h>
#include <rdma/fi_tagged.h>

#include <algorithm>
#include <cstring>

#include "transport/fabric/fabric_endpoint.h"

namespace efacoll {

// After choose_protocol: the providers a truncation stops use bounce buffers where the
// one-sided protocol leaves messages two-sided.
void FabricTransport::plan_bounce() {
  if (truncation_stops_ && info_.rdma) bounce_bytes_ = info_.rdma_threshold - 1;
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

#include "transport/multirail/multirail_transport.h"

#include <algorithm>

namespace efacoll {

MultiRailTransport::MultiRailTransport(std::vector<std::unique_ptr<Transport>> rails)
    : rails_(std::move(rails)), posted_(rails_.size(), 0) {
  info_ = rails_[0]->info();
  for (size_t r = 1; r < rails_.size(); ++r) {
    const TransportInfo& ri = rails_[r]->info();
    info_.domain += "+" + ri.domain;
    info_.inject_size = std::min(info_.inject_size, ri.inject_size);
    info_.max_msg_size = std::min(info_.max_msg_size, ri.max_msg_size);
    info_.max_posted = std::min(info_.max_posted, ri.max_posted);  // rails share no queue, but
                                                                   // one may take them all
    if (info_.hmem && !ri.hmem) info_.hmem_note = ri.hmem_note;    // why this rail lost it
    info_.hmem = info_.hmem && ri.hmem;
    info_.gpudirect = info_.gpudirect && ri.gpudirect;
    info_.needs_local_mr = info_.needs_local_mr || ri.needs_local_mr;
    info_.quirks |= ri.quirks;
    info_.rdma = info_.rdma && ri.rdma;
    info_.rdma_threshold = std::max(info_.rdma_threshold, ri.rdma_threshold);
  }
}

std::vector<uint8_t> MultiRailTransport::local_address() const {
  std::vector<uint8_t> out(1, static_cast<uint8_t>(rails_.size()));
  for (const auto& rail : rails_) {
    std::vector<uint8_t> a = rail->local_address();
    out.push_back(static_cast<uint8_t>(a.size() & 0xff));
    out.push_back(static_cast<uint8_t>(a.size() >> 8));
    out.insert(out.end(), a.begin(), a.end());
  }
  return out;
}

Status MultiRailTransport::insert_peers(const std::vector<std::vector<uint8_t>>& addresses,
                                        std::vector<PeerAddr>* out) {
  // Split every blob into its rails' addresses; rail r learns the peers that have an r-th rail.
  std::vector<std::vector<std::vector<uint8_t>>> split(addresses.size());
  for (size_t i = 0; i < addresses.size(); ++i) {
    const std::vector<uint8_t>& blob = addresses[i];
    if (blob.empty() || blob[0] == 0) return Status(Code::kInvalid, "multi-rail address empty");
    size_t at = 1;
    for (int r = 0; r < blob[0]; ++r) {
      if (at + 2 > blob.size()) return Status(Code::kInvalid, "multi-rail address truncated");
      const size_t len = blob[at] | (static_cast<size_t>(blob[at + 1]) << 8);
      at += 2;
      if (at + len > blob.size()) return Status(Code::kInvalid, "multi-rail address truncated");
      split[i].emplace_back(blob.begin() + at, blob.begin() + at + len);
      at += len;
    }
  }
  std::vector<std::vector<PeerAddr>> rail_addrs(rails_.size());
  for (size_t r = 0; r < rails_.size(); ++r) {
    std::vector<std::vector<uint8_t>> mine;
    for (const auto& parts : split) {
      if (r < parts.size()) mine.push_back(parts[r]);
    }
    if (!mine.empty()) EFACOLL_RETURN_IF_ERROR(rails_[r]->insert_peers(mine, &rail_addrs[r]));
  }
  std::vector<size_t> next(rails_.size(), 0);
  out->clear();
  for (size_t i = 0; i < addresses.size(); ++i) {
    Peer peer;
    const size_t common = std::min(split[i].size(), rails_.size());
    for (size_t r = 0; r < rails_.size(); ++r) {
      if (r >= split[i].size()) continue;
      const PeerAddr a = rail_addrs[r][next[r]++];
      if (r < common) peer.rail_addr.push_back(a);
    }
    auto known = known_.find(addresses[i]);
    if (known != known_.end()) {
      out->push_back(known->second);
      continue;
    }
    const PeerAddr id = peers_.size();
    peers_.push_back(std::move(peer));
    known_[addresses[i]] = id;
    out->push_back(id);
  }
  return Status::ok();
}

Status MultiRailTransport::register_memory(void* ptr, size_t bytes, MemKind kind, int device,
                                           MemRegion* out) {
  auto regions = std::make_unique<std::vector<MemRegion>>(rails_.size());
  for (size_t r = 0; r < rails_.size(); ++r) {
    Status st = rails_[r]->register_memory(ptr, bytes, kind, device, &(*regions)[r]);
    if (!st.is_ok()) {
      for (size_t k = 0; k < r; ++k) rails_[k]->deregister_memory(&(*regions)[k]);
      return st;
    }
  }
  out->base = reinterpret_cast<uintptr_t>(ptr);
  out->bytes = bytes;
  out->desc = (*regions)[0].desc;
  out->on_gpu = (*regions)[0].on_gpu;
  out->by_dmabuf = (*regions)[0].by_dmabuf;
  out->handle = regions.release();
  return Status::ok();
}

void MultiRailTransport::deregister_memory(MemRegion* region) {
  auto* regions = static_cast<std::vector<MemRegion>*>(region->handle);
  if (regions == nullptr) return;
  for (size_t r = 0; r < rails_.size(); ++r) rails_[r]->deregister_memory(&(*regions)[r]);
  delete regions;
  region->handle = nullptr;
  region->desc = nullptr;
}

const MemRegion* MultiRailTransport::on_rail(const MemRegion* region, size_t rail) const {
  if (region == nullptr || region->handle == nullptr) return nullptr;
  return &(*static_cast<const std::vector<MemRegion>*>(region->handle))[rail];
}

// Sends and receives take their rail the same way: that is what makes both ends meet.
template <typename Post>
Status MultiRailTransport::post_on_rail(PeerAddr peer, uint64_t tag, const MemRegion* region,
                                        Post&& post) {
  const Peer& p = peers_.at(peer);
  const size_t rail = rail_of(p, tag);
  EFACOLL_RETURN_IF_ERROR(post(*rails_[rail], p.rail_addr[rail], on_rail(region, rail)));
  ++posted_[rail];
  return Status::ok();
}

Status MultiRailTransport::send(PeerAddr peer, const void* buf, size_t bytes, uint64_t tag,
                                const MemRegion* region, Completion* completion) {
  return post_on_rail(peer, tag, region, [&](Transport& t, PeerAddr a, const MemRegion* m) {
    return t.send(a, buf, bytes, tag, m, completion);
  });
}

Status MultiRailTransport::recv(PeerAddr peer, void* buf, size_t bytes, uint64_t tag,
                                const MemRegion* region, Completion* completion) {
  return post_on_rail(peer, tag, region, [&](Transport& t, PeerAddr a, const MemRegion* m) {
    return t.recv(a, buf, bytes, tag, m, completion);
  });
}

// A look that ignores the message id looks on the first rail only: a call of another shape sends
// on every rail, so its messages show there too.
Status MultiRailTransport::peek(PeerAddr peer, uint64_t tag, uint64_t ignore,
                                Completion* completion) {
  const Peer& p = peers_.at(peer);
  const size_t rail = (ignore & kMaxMsgIdInTag) ? 0 : rail_of(p, tag);
  return rails_[rail]->peek(p.rail_addr[rail], tag, ignore, completion);
}

Status MultiRailTransport::progress(int* completed) {
  *completed = 0;
  Status first;
  for (auto& rail : rails_) {
    int n = 0;
    Status st = rail->progress(&n);
    *completed += n;
    if (first.is_ok() && !st.is_ok()) first = st;
  }
  return first;
}

void MultiRailTransport::cancel(Completion* completion) {
  for (auto& rail : rails_) rail->cancel(completion);
}

bool MultiRailTransport::holds_operations() const {
  for (const auto& rail : rails_)
    if (rail->holds_operations()) return true;
  return false;
}

size_t MultiRailTransport::late_writes_awaited() const {
  size_t awaited = 0;
  for (const auto& rail : rails_) awaited += rail->late_writes_awaited();
  return awaited;
}

bool MultiRailTransport::oldest_provider_call(ProviderCall* out) const {
  bool any = false;
  for (const auto& rail : rails_) {
    ProviderCall c;
    if (!rail->oldest_provider_call(&c) || (any && c.since >= out->since)) continue;
    *out = c;
    any = true;
  }
  return any;
}

}  // namespace efacoll

// A transport that passes every call to the one it wraps: fault injection overrides only the
// calls it changes (RankSetup::wrap).
#pragma once
#include <memory>
#include <utility>
#include <vector>

#include "transport/transport.h"

namespace efacoll {
namespace testing {

class ForwardingTransport : public Transport {
 public:
  explicit ForwardingTransport(std::unique_ptr<Transport> inner) : inner_(std::move(inner)) {}
  const TransportInfo& info() const override { return inner_->info(); }
  std::vector<uint8_t> local_address() const override { return inner_->local_address(); }
  Status insert_peers(const std::vector<std::vector<uint8_t>>& addresses,
                      std::vector<PeerAddr>* out) override {
    return inner_->insert_peers(addresses, out);
  }
  Status register_memory(void* ptr, size_t bytes, MemKind kind, int device,
                         MemRegion* out) override {
    return inner_->register_memory(ptr, bytes, kind, device, out);
  }
  void deregister_memory(MemRegion* region) override { inner_->deregister_memory(region); }
  Status send(PeerAddr peer, const void* buf, size_t bytes, uint64_t tag, const MemRegion* region,
              Completion* c) override {
    return inner_->send(peer, buf, bytes, tag, region, c);
  }
  Status recv(PeerAddr peer, void* buf, size_t bytes, uint64_t tag, const MemRegion* region,
              Completion* c) override {
    return inner_->recv(peer, buf, bytes, tag, region, c);
  }
  Status peek(PeerAddr peer, uint64_t tag, uint64_t ignore, Completion* c) override {
    return inner_->peek(peer, tag, ignore, c);
  }
  Status progress(int* completed) override { return inner_->progress(completed); }
  void cancel(Completion* c) override { inner_->cancel(c); }
  bool oldest_provider_call(ProviderCall* out) const override {
    return inner_->oldest_provider_call(out);
  }
  bool holds_operations() const override { return inner_->holds_operations(); }
  size_t late_writes_awaited() const override { return inner_->late_writes_awaited(); }
  Status answer_stale(const void* message, size_t bytes, const std::vector<PeerAddr>& peers,
                      Completion* c) override {
    return inner_->answer_stale(message, bytes, peers, c);
  }

 private:
  std::unique_ptr<Transport> inner_;
};

}  // namespace testing
}  // namespace efacoll

// Several endpoints, one per NIC, behind one Transport: a GPU with several nearest NICs (p5:
// four EFAs per GPU) keeps them all busy. Each message travels on one rail chosen from its tag,
// which sender and receiver share, so the two ends always meet on the same rail; a collective's
// chunks, numbered consecutively, spread round-robin over the rails. Between two ranks with
// different rail counts the smaller count is used.
#pragma once
#include <map>
#include <memory>
#include <vector>

#include "transport/tag.h"
#include "transport/transport.h"

namespace efacoll {

class MultiRailTransport : public Transport {
 public:
  // rails: open transports of one provider, at least one.
  explicit MultiRailTransport(std::vector<std::unique_ptr<Transport>> rails);
  ~MultiRailTransport() override = default;

  const TransportInfo& info() const override { return info_; }
  // [rail count: 1 byte] then per rail [length: 2 bytes][address].
  std::vector<uint8_t> local_address() const override;
  Status insert_peers(const std::vector<std::vector<uint8_t>>& addresses,
                      std::vector<PeerAddr>* out) override;
  // One registration per rail; the region's handle holds them.
  Status register_memory(void* ptr, size_t bytes, MemKind kind, int device,
                         MemRegion* out) override;
  void deregister_memory(MemRegion* region) override;
  Status send(PeerAddr peer, const void* buf, size_t bytes, uint64_t tag, const MemRegion* region,
              Completion* completion) override;
  Status recv(PeerAddr peer, void* buf, size_t bytes, uint64_t tag, const MemRegion* region,
              Completion* completion) override;
  Status peek(PeerAddr peer, uint64_t tag, uint64_t ignore, Completion* completion) override;
  Status progress(int* completed) override;
  // Every rail is asked; only the one that posted the operation acts on it.
  void cancel(Completion* completion) override;
  bool oldest_provider_call(ProviderCall* out) const override;
  bool holds_operations() const override;
  size_t late_writes_awaited() const override;

  size_t rails() const { return rails_.size(); }
  // Messages posted (sends and receives) on each rail since the start.
  const std::vector<uint64_t>& posted_per_rail() const { return posted_; }

 private:
  struct Peer {
    std::vector<PeerAddr> rail_addr;  // its address on each rail both sides have
  };
  // The rail of a message (tag) to or from a peer, and the region's registration on it.
  // By message id: a call's chunks go round-robin, and channel c of C (ids c mod C) keeps to
  // rail c mod rails when C is a multiple of the rail count.
  size_t rail_of(const Peer& peer, uint64_t tag) const {
    return (tag & kMaxMsgIdInTag) % peer.rail_addr.size();
  }
  const MemRegion* on_rail(const MemRegion* region, size_t rail) const;
  template <typename Post>
  Status post_on_rail(PeerAddr peer, uint64_t tag, const MemRegion* region, Post&& post);

  std::vector<std::unique_ptr<Transport>> rails_;
  TransportInfo info_;
  std::vector<Peer> peers_;
  std::map<std::vector<uint8_t>, PeerAddr> known_;
  std::vector<uint64_t> posted_;
};

}  // namespace efacoll

// Registration cache. A registration is reused only when the memory behind an address can be
// identified exactly: `identity` names one allocation (our own buffers; later CUDA buffer ids),
// so a buffer freed and reallocated at the same address is never mistaken for the old one.
// Identity 0 means "cannot tell": registered for the call and released with it (libfabric's
// EFA provider caches those itself, with memory monitors).
#pragma once
#include <cstddef>
#include <cstdint>
#include <list>
#include <vector>

#include "transport/transport.h"

namespace efacoll {

class MrCache {
 private:
  struct Entry {
    uintptr_t begin, end;
    uint64_t identity;
    MemRegion region;
    int users = 0;  // calls in progress that hold it: never evicted meanwhile
  };

 public:
  // What one collective holds until end_call(). Per call, not per cache: under
  // MPI_THREAD_MULTIPLE collectives on other communicators run between this one's steps.
  struct Call {
    std::list<MemRegion> regions;  // made for this call alone; a list keeps their addresses
    std::vector<Entry*> held;
  };

  MrCache(Transport* transport, size_t capacity) : transport_(transport), capacity_(capacity) {}
  ~MrCache();
  MrCache(const MrCache&) = delete;
  MrCache& operator=(const MrCache&) = delete;

  // A registration covering [ptr, ptr+bytes), valid until end_call(call); nullptr for an empty
  // range.
  Status acquire(Call* call, const void* ptr, size_t bytes, uint64_t identity, MemKind kind,
                 int device, const MemRegion** region);
  // Releases the call's own registrations and its hold on cached ones; then evicts the least
  // recently used entries beyond capacity that no call holds. still_in_use: the call failed
  // with operations that may still reach its memory (posted receives the provider keeps, late
  // one-sided writes): every registration it used is retired instead, open until
  // close_retired(), since closing one under a posted operation is undefined (EFA: "MR
  // ABORTING").
  void end_call(Call* call, bool still_in_use = false);
  // Forget every cached registration of this allocation (it is being freed; no call holds it).
  void forget(uint64_t identity);
  // Takes every cached registration of this allocation out of use without closing it, until
  // the cache closes: the allocation is retired (comm_late_writes.cc), and a late write that
  // met a closed key instead of landing stalls udp;ofi_rxd between the two endpoints for good.
  // Calls may still hold them.
  void retire(uint64_t identity);
  // Closes the retired registrations once no write can reach them any more; false, closing
  // nothing, while a call still holds one.
  bool close_retired();
  size_t retired() const { return retired_.size(); }

  size_t cached() const { return entries_.size(); }
  size_t cached_bytes() const;
  size_t capacity() const { return capacity_; }
  uint64_t registrations() const { return registrations_; }

 private:
  Transport* transport_;
  size_t capacity_;
  std::list<Entry> entries_;  // most recently used first
  std::list<Entry> retired_;  // open until the cache closes (retire())
  uint64_t registrations_ = 0;
};

}  // namespace efacoll

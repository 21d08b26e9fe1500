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
 public:
  MrCache(Transport* transport, size_t capacity) : transport_(transport), capacity_(capacity) {}
  ~MrCache();
  MrCache(const MrCache&) = delete;
  MrCache& operator=(const MrCache&) = delete;

  // A registration covering [ptr, ptr+bytes), valid until end_call() (identity 0) or eviction;
  // nullptr for an empty range.
  Status acquire(const void* ptr, size_t bytes, uint64_t identity, MemKind kind, int device,
                 const MemRegion** region);
  // Releases the registrations made for this call only.
  void end_call();
  // Forget every cached registration of this allocation (it is being freed).
  void forget(uint64_t identity);

  size_t cached() const { return entries_.size(); }
  uint64_t registrations() const { return registrations_; }

 private:
  struct Entry {
    uintptr_t begin, end;
    uint64_t identity;
    MemRegion region;
  };
  Transport* transport_;
  size_t capacity_;
  std::list<Entry> entries_;           // most recently used first
  std::list<MemRegion> call_regions_;  // a list: regions handed out keep their addresses
  uint64_t registrations_ = 0;
};

}  // namespace efacoll

#include "transport/mr_cache.h"

namespace efacoll {

MrCache::~MrCache() {
  end_call();
  for (auto& e : entries_) transport_->deregister_memory(&e.region);
}

Status MrCache::acquire(const void* ptr, size_t bytes, uint64_t identity, MemKind kind, int device,
                        const MemRegion** region) {
  *region = nullptr;
  if (ptr == nullptr || bytes == 0) return Status::ok();
  const auto begin = reinterpret_cast<uintptr_t>(ptr);
  const uintptr_t end = begin + bytes;
  if (identity != 0) {
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->identity == identity && it->begin <= begin && end <= it->end) {
        entries_.splice(entries_.begin(), entries_, it);
        *region = &it->region;
        return Status::ok();
      }
    }
  }
  MemRegion fresh;
  EFACOLL_RETURN_IF_ERROR(
      transport_->register_memory(const_cast<void*>(ptr), bytes, kind, device, &fresh));
  ++registrations_;
  if (identity == 0) {
    call_regions_.push_back(fresh);
    *region = &call_regions_.back();
    return Status::ok();
  }
  entries_.push_front({begin, end, identity, fresh});
  *region = &entries_.front().region;
  return Status::ok();
}

// Eviction waits for the end of the call: a region handed out must outlive the call.
void MrCache::end_call() {
  for (auto& r : call_regions_) transport_->deregister_memory(&r);
  call_regions_.clear();
  while (entries_.size() > capacity_) {
    transport_->deregister_memory(&entries_.back().region);
    entries_.pop_back();
  }
}

void MrCache::forget(uint64_t identity) {
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->identity == identity) {
      transport_->deregister_memory(&it->region);
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace efacoll

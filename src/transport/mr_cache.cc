#include "transport/mr_cache.h"

namespace efacoll {

MrCache::~MrCache() {
  end_call();
  for (auto& e : entries_) transport_->deregister_memory(&e.region);
}

Status MrCache::acquire(const void* ptr, size_t bytes, uint64_t identity, MemKind kind, int device,
                        void** desc) {
  *desc = nullptr;
  if (ptr == nullptr || bytes == 0) return Status::ok();
  const auto begin = reinterpret_cast<uintptr_t>(ptr);
  const uintptr_t end = begin + bytes;
  if (identity != 0) {
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->identity == identity && it->begin <= begin && end <= it->end) {
        entries_.splice(entries_.begin(), entries_, it);
        *desc = it->region.desc;
        return Status::ok();
      }
    }
  }
  MemRegion region;
  EFACOLL_RETURN_IF_ERROR(
      transport_->register_memory(const_cast<void*>(ptr), bytes, kind, device, &region));
  ++registrations_;
  *desc = region.desc;
  if (identity == 0) {
    call_regions_.push_back(region);
    return Status::ok();
  }
  entries_.push_front({begin, end, identity, region});
  while (entries_.size() > capacity_) {
    transport_->deregister_memory(&entries_.back().region);
    entries_.pop_back();
  }
  return Status::ok();
}

void MrCache::end_call() {
  for (auto& r : call_regions_) transport_->deregister_memory(&r);
  call_regions_.clear();
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

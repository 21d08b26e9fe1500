#include "transport/mr_cache.h"

#include <iterator>

namespace efacoll {

MrCache::~MrCache() {
  for (auto* list : {&entries_, &retired_})
    for (auto& e : *list) transport_->deregister_memory(&e.region);
}

Status MrCache::acquire(Call* call, const void* ptr, size_t bytes, uint64_t identity, MemKind kind,
                        int device, const MemRegion** region) {
  *region = nullptr;
  if (ptr == nullptr || bytes == 0) return Status::ok();
  const auto begin = reinterpret_cast<uintptr_t>(ptr);
  const uintptr_t end = begin + bytes;
  if (identity != 0) {
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->identity == identity && it->begin <= begin && end <= it->end) {
        entries_.splice(entries_.begin(), entries_, it);
        it->users++;
        call->held.push_back(&*it);
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
    call->regions.push_back(fresh);
    *region = &call->regions.back();
    return Status::ok();
  }
  entries_.push_front({begin, end, identity, fresh, 1});
  call->held.push_back(&entries_.front());
  *region = &entries_.front().region;
  return Status::ok();
}

// Eviction waits for the end of the call: a region handed out must outlive the call.
void MrCache::end_call(Call* call, bool still_in_use) {
  for (auto& r : call->regions) {
    if (still_in_use)
      retired_.push_back({r.base, r.base + r.bytes, 0, r, 0});
    else
      transport_->deregister_memory(&r);
  }
  call->regions.clear();
  for (Entry* e : call->held) {
    e->users--;
    if (!still_in_use) continue;
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (&*it != e) continue;
      retired_.splice(retired_.end(), entries_, it);
      break;
    }
  }
  call->held.clear();
  size_t excess = entries_.size() > capacity_ ? entries_.size() - capacity_ : 0;
  for (auto it = entries_.end(); excess > 0 && it != entries_.begin();) {
    --it;
    if (it->users > 0) continue;
    transport_->deregister_memory(&it->region);
    it = entries_.erase(it);
    --excess;
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

void MrCache::retire(uint64_t identity) {
  for (auto it = entries_.begin(); it != entries_.end();) {
    auto next = std::next(it);
    if (it->identity == identity) retired_.splice(retired_.end(), entries_, it);
    it = next;
  }
}

bool MrCache::close_retired() {
  for (const auto& e : retired_)
    if (e.users > 0) return false;
  for (auto& e : retired_) transport_->deregister_memory(&e.region);
  retired_.clear();
  return true;
}

size_t MrCache::cached_bytes() const {
  size_t total = 0;
  for (const auto& e : entries_) total += e.end - e.begin;
  return total;
}

}  // namespace efacoll

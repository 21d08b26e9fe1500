#include "engine/ipc_mappings.h"

#include <algorithm>

namespace efacoll {

IpcMappings::IpcMappings(Open open, Close close, size_t kept)
    : open_(std::move(open)), close_(std::move(close)), kept_(kept) {}

IpcMappings::~IpcMappings() {
  for (auto& kv : cached_) close_(kv.second);
  for (void* m : call_only_) close_(m);
}

void IpcMappings::close_idle(uint64_t process) {
  for (auto it = cached_.begin(); it != cached_.end();) {
    const bool idle = it->first.first == process &&
                      std::find(in_use_.begin(), in_use_.end(), it->second) == in_use_.end();
    if (!idle) {
      ++it;
      continue;
    }
    close_(it->second);
    recent_.remove(it->first);
    it = cached_.erase(it);
  }
}

Status IpcMappings::open(uint64_t process, const void* handle, void** base) {
  Status st = open_(handle, base);
  if (st.code() != Code::kAgain) return st;
  // Small allocations share the driver's larger chunks, and a chunk is mapped once: an older
  // mapping of the same chunk (memory the peer freed, or another buffer of it) is in the way.
  close_idle(process);
  return open_(handle, base);
}

Status IpcMappings::map(uint64_t process, uint64_t buffer_id, const void* handle, void** base) {
  const Key key(process, buffer_id);
  auto it = buffer_id ? cached_.find(key) : cached_.end();
  if (it != cached_.end()) {
    *base = it->second;
    recent_.remove(key);
    recent_.push_front(key);
  } else {
    EFACOLL_RETURN_IF_ERROR(open(process, handle, base));
    if (buffer_id) {
      cached_[key] = *base;
      recent_.push_front(key);
    } else {
      call_only_.push_back(*base);
    }
  }
  in_use_.push_back(*base);
  return Status::ok();
}

Status IpcMappings::open_kept(uint64_t process, const void* handle, void** base) {
  return open(process, handle, base);
}

void IpcMappings::end_call() {
  for (void* m : call_only_) close_(m);
  call_only_.clear();
  in_use_.clear();
  while (recent_.size() > kept_) {
    const Key key = recent_.back();
    recent_.pop_back();
    close_(cached_[key]);
    cached_.erase(key);
  }
}

}  // namespace efacoll

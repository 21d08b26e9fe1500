#include "engine/ipc_mappings.h"

#include <iterator>
#include <utility>

namespace efacoll {

IpcMappings::IpcMappings(Open open, Close close, size_t kept, std::function<void()> make_way)
    : open_(std::move(open)),
      close_(std::move(close)),
      kept_(kept),
      make_way_(std::move(make_way)) {}

IpcMappings::~IpcMappings() {
  for (auto& kv : cached_) close_(kv.second.base);
}

void IpcMappings::forget(std::map<Key, Cached>::iterator it) {
  close_(it->second.base);
  recent_.remove(it->first);
  cached_.erase(it);
}

void IpcMappings::close_idle(uint64_t process) {
  for (auto it = cached_.begin(); it != cached_.end();) {
    auto next = std::next(it);
    if (it->first.first == process && it->second.users == 0) forget(it);
    it = next;
  }
}

Status IpcMappings::open(uint64_t process, const void* handle, void** base) {
  Status st = open_(handle, base);
  if (st.code() != Code::kAgain) return st;
  // Small allocations share the driver's larger chunks, and a chunk is mapped once: an older
  // mapping of the same chunk (memory the peer freed, or another buffer of it) is in the way.
  close_idle(process);
  if (make_way_) make_way_();
  return open_(handle, base);
}

Status IpcMappings::map(Call* call, uint64_t process, uint64_t buffer_id, const void* handle,
                        void** base) {
  const Key key(process, buffer_id);
  auto it = buffer_id ? cached_.find(key) : cached_.end();
  if (it == cached_.end()) {
    EFACOLL_RETURN_IF_ERROR(open(process, handle, base));
    if (!buffer_id) {
      call->own.push_back(*base);
      return Status::ok();
    }
    it = cached_.emplace(key, Cached{*base, 0}).first;
  } else {
    recent_.remove(key);
  }
  recent_.push_front(key);
  *base = it->second.base;
  ++it->second.users;
  call->used.push_back(key);
  return Status::ok();
}

Status IpcMappings::open_kept(uint64_t process, const void* handle, void** base) {
  return open(process, handle, base);
}

void IpcMappings::end_call(Call* call) {
  for (void* m : call->own) close_(m);
  for (const Key& key : call->used) --cached_.at(key).users;
  call->own.clear();
  call->used.clear();
  const size_t excess = recent_.size() > kept_ ? recent_.size() - kept_ : 0;
  std::vector<Key> oldest_idle;
  for (auto key = recent_.rbegin(); oldest_idle.size() < excess && key != recent_.rend(); ++key) {
    if (cached_.at(*key).users == 0) oldest_idle.push_back(*key);
  }
  for (const Key& key : oldest_idle) forget(cached_.find(key));
}

}  // namespace efacoll

#include "engine/paths/host_copies.h"

#include <cstdint>

#include "engine/gpu_memory_to_free.h"
#include "engine/lock_lent.h"
#include "gpu/gpu_runtime.h"

namespace efacoll {

Status HostCopiesPath::prepare(size_t bytes, std::unique_lock<std::mutex>* lent) {
  if (pinned_bytes_ >= bytes) return Status::ok();
  if (pinned_) give_back_(GpuMemoryToFree::pinned_memory(pinned_, pinned_bytes_));
  pinned_ = nullptr;
  pinned_bytes_ = 0;
  LockLent lending(lent);
  EFACOLL_RETURN_IF_ERROR(gpu_->alloc_pinned(bytes, &pinned_));
  pinned_bytes_ = bytes;
  return Status::ok();
}

Status HostCopiesPath::run(const CollArgs& args, size_t send_bytes, size_t recv_bytes,
                           size_t result_bytes,
                           const std::function<Status(const CollArgs& on_host)>& schedule) {
  auto* host_send = static_cast<uint8_t*>(pinned_);
  uint8_t* host_recv = host_send + send_bytes;
  CollArgs h = args;
  h.send_mem = h.recv_mem = MemKind::kPinnedHost;
  h.send_buffer_id = h.recv_buffer_id = 0;
  h.sendbuf = args.inplace ? nullptr : host_send;
  h.recvbuf = host_recv;
  if (!args.inplace && send_bytes)
    EFACOLL_RETURN_IF_ERROR(gpu_->copy(host_send, args.sendbuf, send_bytes));
  // In place, the input is in the receive buffer.
  if (args.inplace && recv_bytes)
    EFACOLL_RETURN_IF_ERROR(gpu_->copy(host_recv, args.recvbuf, recv_bytes));
  EFACOLL_RETURN_IF_ERROR(schedule(h));
  return result_bytes ? gpu_->copy(args.recvbuf, host_recv, result_bytes) : Status::ok();
}

bool HostCopiesPath::retire_if_holds(const void* buffer, GpuMemoryToFree* retired, size_t* bytes) {
  const auto* p = static_cast<const uint8_t*>(buffer);
  const auto* base = static_cast<const uint8_t*>(pinned_);
  if (base == nullptr || p < base || p >= base + pinned_bytes_) return false;
  retired->add_pinned(pinned_, pinned_bytes_);
  *bytes = pinned_bytes_;
  pinned_ = nullptr;
  pinned_bytes_ = 0;
  return true;
}

void HostCopiesPath::give_memory(GpuMemoryToFree* out) {
  if (pinned_) out->add_pinned(pinned_, pinned_bytes_);
  pinned_ = nullptr;
  pinned_bytes_ = 0;
}

}  // namespace efacoll

#include "host_gpu_runtime.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "core/host_reduce.h"
#include "core/local_ops.h"
#include "host_ll_protocol.h"

namespace efacoll {
namespace testing {

namespace {

void raise_to(std::atomic<int>* most, int now) {
  int seen = most->load();
  while (now > seen && !most->compare_exchange_weak(seen, now)) {
  }
}

}  // namespace

Status HostGpuRuntime::acquire_local_ops(int, LocalOps** out) {
  *out = new HostLocalOps();
  raise_to(&counts_->most_at_once, ++held_);
  return Status::ok();
}

void HostGpuRuntime::release_local_ops(int, LocalOps* ops) {
  --held_;
  delete ops;
}

HostGpuRuntime::Counts::~Counts() {
  for (auto& [address, bytes] : freed) std::free(reinterpret_cast<void*>(address));
}

bool HostGpuRuntime::Counts::in_freed_memory(const void* p, size_t bytes) const {
  const auto begin = reinterpret_cast<uintptr_t>(p), end = begin + std::max<size_t>(bytes, 1);
  std::lock_guard<std::mutex> lock(memory_mutex);
  auto it = freed.lower_bound(end);
  if (it == freed.begin()) return false;
  --it;  // the last block that starts below `end`
  return it->first + it->second > begin;
}

Status HostGpuRuntime::alloc_device(int device, size_t bytes, void** out) {
  if (device >= 0 && refuse_device_bytes && bytes == refuse_device_bytes)
    return Status(Code::kCuda, "out of device memory (refused by the test)");
  *out = std::calloc(1, bytes ? bytes : 1);
  if (*out == nullptr) return Status(Code::kInternal, "out of memory");
  if (counts_->keep_freed) {
    std::lock_guard<std::mutex> lock(counts_->memory_mutex);
    counts_->live[reinterpret_cast<uintptr_t>(*out)] = bytes ? bytes : 1;
  }
  return Status::ok();
}

void HostGpuRuntime::release(void* ptr) {
  if (counts_->keep_freed && ptr != nullptr) {
    std::lock_guard<std::mutex> lock(counts_->memory_mutex);
    auto it = counts_->live.find(reinterpret_cast<uintptr_t>(ptr));
    if (it != counts_->live.end()) {
      std::memset(ptr, 0xdd, it->second);
      counts_->freed.insert(*it);
      counts_->live.erase(it);
      return;
    }
  }
  std::free(ptr);
}

void HostGpuRuntime::wait_for_kernels() {
  if (!frees_wait_) return;
  std::unique_lock<std::mutex> lock(ll_mutex_);
  const uint64_t begun = ll_started_;
  auto earlier_ended = [&] { return ll_running_.empty() || *ll_running_.begin() > begun; };
  if (!earlier_ended()) ++counts_->frees_waited;
  ll_ended_.wait(lock, earlier_ended);
}

void HostGpuRuntime::free_device(int, void* ptr) {
  wait_for_kernels();
  release(ptr);
}

Status HostGpuRuntime::alloc_pinned(size_t bytes, void** out) {
  EFACOLL_RETURN_IF_ERROR(alloc_device(-1, bytes, out));
  std::lock_guard<std::mutex> lock(pinned_mutex_);
  pinned_[reinterpret_cast<uintptr_t>(*out)] = bytes ? bytes : 1;
  return Status::ok();
}

bool HostGpuRuntime::in_pinned(const void* p) const {
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(pinned_mutex_);
  auto it = pinned_.upper_bound(at);
  if (it == pinned_.begin()) return false;
  --it;  // the last block that starts at or below `at`
  return at < it->first + it->second;
}

void HostGpuRuntime::free_pinned(void* ptr) {
  wait_for_kernels();
  {
    std::lock_guard<std::mutex> lock(pinned_mutex_);
    pinned_.erase(reinterpret_cast<uintptr_t>(ptr));
  }
  release(ptr);
}

Status HostGpuRuntime::synchronize() {
  if (synchronize_wait.count()) std::this_thread::sleep_for(synchronize_wait);
  return Status::ok();
}

Status HostGpuRuntime::copy(void* dst, const void* src, size_t bytes) {
  if (pinned_copy_wait.count() && (in_pinned(dst) || in_pinned(src)))
    std::this_thread::sleep_for(pinned_copy_wait);
  std::memmove(dst, src, bytes);
  return Status::ok();
}

Status HostGpuRuntime::copy_2d(void* dst, size_t dpitch, const void* src, size_t spitch,
                               size_t width, size_t height) {
  for (size_t row = 0; row < height; ++row) {
    std::memmove(static_cast<uint8_t*>(dst) + row * dpitch,
                 static_cast<const uint8_t*>(src) + row * spitch, width);
  }
  return Status::ok();
}

Status HostGpuRuntime::reduce(void* dst, const void* a, const void* b, size_t count, DType type,
                              ROp op) {
  return host_reduce(dst, a, b, count, type, op);
}

Status HostGpuRuntime::ipc_export(void* base, void* handle_out) {
  if (!ipc_) return Status(Code::kUnsupported, "no CUDA IPC on host memory");
  std::memset(handle_out, 0, kIpcHandleBytes);
  std::memcpy(handle_out, &base, sizeof(base));
  return Status::ok();
}

Status HostGpuRuntime::ipc_open(const void* handle, void** out) {
  if (!ipc_) return Status(Code::kUnsupported, "no CUDA IPC on host memory");
  std::memcpy(out, handle, sizeof(*out));
  ++counts_->ipc_opens;
  return Status::ok();
}

Status HostGpuRuntime::device_uuid(int, std::string* out) {
  if (one_shared_gpu) {
    out->assign(16, 's');
    return Status::ok();
  }
  // Every rank its own GPU: the runtime's address (not its first bytes, which every runtime
  // shares).
  const HostGpuRuntime* self = this;
  out->assign(reinterpret_cast<const char*>(&self), sizeof(self));
  out->resize(16, '\0');
  return Status::ok();
}

Status HostGpuRuntime::zero(void* dst, size_t bytes) {
  std::memset(dst, 0, bytes);
  return Status::ok();
}

Status HostGpuRuntime::run_ll(int, const LlCall& call, LlFault* fault) {
  if (!ipc_) return Status(Code::kUnsupported, "no low-latency protocol on host memory");
  ++counts_->ll_calls;
  if (call.lends_lock) ++counts_->ll_lent;
  raise_to(&counts_->ll_most_at_once, ++ll_held_);
  uint64_t ticket;
  {
    std::lock_guard<std::mutex> lock(ll_mutex_);
    ticket = ++ll_started_;
    ll_running_.insert(ticket);
  }
  const Status st = run_ll_on_host(call, fault);
  {
    std::lock_guard<std::mutex> lock(ll_mutex_);
    ll_running_.erase(ticket);
  }
  ll_ended_.notify_all();
  --ll_held_;
  return st;
}

}  // namespace testing
}  // namespace efacoll

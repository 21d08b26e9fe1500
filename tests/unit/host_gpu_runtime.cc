#include "host_gpu_runtime.h"

#include <cstdlib>
#include <cstring>

#include "core/host_reduce.h"

namespace efacoll {
namespace testing {

Status HostGpuRuntime::acquire_local_ops(int, LocalOps** out) {
  *out = new HostLocalOps();
  const int now = ++held_;
  int most = counts_->most_at_once.load();
  while (now > most && !counts_->most_at_once.compare_exchange_weak(most, now)) {
  }
  return Status::ok();
}

void HostGpuRuntime::release_local_ops(int, LocalOps* ops) {
  --held_;
  delete ops;
}

Status HostGpuRuntime::alloc_device(int, size_t bytes, void** out) {
  *out = std::calloc(1, bytes ? bytes : 1);
  return *out ? Status::ok() : Status(Code::kInternal, "out of memory");
}

void HostGpuRuntime::free_device(int, void* ptr) { std::free(ptr); }

Status HostGpuRuntime::alloc_pinned(size_t bytes, void** out) {
  return alloc_device(-1, bytes, out);
}

void HostGpuRuntime::free_pinned(void* ptr) { std::free(ptr); }

Status HostGpuRuntime::copy(void* dst, const void* src, size_t bytes) {
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

Status HostGpuRuntime::ipc_export(void*, void*) {
  return Status(Code::kUnsupported, "no CUDA IPC on host memory");
}

Status HostGpuRuntime::ipc_open(const void*, void**) {
  return Status(Code::kUnsupported, "no CUDA IPC on host memory");
}

Status HostGpuRuntime::device_uuid(int, std::string* out) {
  // Every rank its own GPU.
  out->assign(reinterpret_cast<const char*>(this), sizeof(this));
  out->resize(16, '\0');
  return Status::ok();
}

Status HostGpuRuntime::zero(void* dst, size_t bytes) {
  std::memset(dst, 0, bytes);
  return Status::ok();
}

Status HostGpuRuntime::run_ll(int, const LlCall&, LlFault*) {
  return Status(Code::kUnsupported, "no low-latency protocol on host memory");
}

}  // namespace testing
}  // namespace efacoll

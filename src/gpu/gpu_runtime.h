// The engine's view of CUDA: local operations on a device's streams, device and pinned host
// allocations. No CUDA header here, so the engine builds without the toolkit.
#pragma once
#include <cstddef>
#include <memory>
#include <string>

#include "core/local_ops.h"
#include "efacoll/status.h"

namespace efacoll {

class GpuRuntime {
 public:
  virtual ~GpuRuntime() = default;
  // The device's local operations (its own streams; never the user's). Owned by the runtime.
  virtual Status local_ops(int device, LocalOps** out) = 0;
  virtual Status alloc_device(int device, size_t bytes, void** out) = 0;
  virtual void free_device(int device, void* ptr) = 0;
  virtual Status alloc_pinned(size_t bytes, void** out) = 0;
  virtual void free_pinned(void* ptr) = 0;
  // Synchronous copy between any two memories (unified addressing).
  virtual Status copy(void* dst, const void* src, size_t bytes) = 0;
  // Makes `device` current for this thread until the guard ends.
  class DeviceGuard;
  virtual int set_device(int device) = 0;  // returns the previous one
};

// The runtime, or nullptr with the reason (no CUDA support built, or no usable GPU).
std::unique_ptr<GpuRuntime> make_gpu_runtime(std::string* why_not);

class GpuRuntime::DeviceGuard {
 public:
  DeviceGuard(GpuRuntime* rt, int device) : rt_(rt), previous_(rt->set_device(device)) {}
  ~DeviceGuard() { rt_->set_device(previous_); }

 private:
  GpuRuntime* rt_;
  int previous_;
};

}  // namespace efacoll

// The engine's view of CUDA: local operations on a device's streams, device and pinned host
// allocations. No CUDA header here, so the engine builds without the toolkit.
#pragma once
#include <cstddef>
#include <memory>
#include <string>

#include "common/local_ops.h"
#include "efacoll/status.h"
#include "gpu/ll_protocol.h"

namespace efacoll {

class GpuRuntime {
 public:
  virtual ~GpuRuntime() = default;
  // Local operations on streams of the device's own (never the user's), for one call until it
  // gives them back: calls under way at once (threads on different communicators) each have
  // their own streams and completions. Owned by the runtime.
  virtual Status acquire_local_ops(int device, LocalOps** out) = 0;
  virtual void release_local_ops(int device, LocalOps* ops) = 0;
  virtual Status alloc_device(int device, size_t bytes, void** out) = 0;
  virtual void free_device(int device, void* ptr) = 0;
  virtual Status alloc_pinned(size_t bytes, void** out) = 0;
  virtual void free_pinned(void* ptr) = 0;
  // Copy between any two memories (unified addressing), complete when it returns.
  virtual Status copy(void* dst, const void* src, size_t bytes) = 0;
  // Synchronous strided copy: `height` rows of `width` bytes, rows `spitch` apart in src and
  // `dpitch` apart in dst (blocks reordered between rank order and node-major order).
  virtual Status copy_2d(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                         size_t height) = 0;
  // Synchronous dst = a op b on device memory (any of them may be a peer's mapping).
  virtual Status reduce(void* dst, const void* a, const void* b, size_t count, DType type,
                        ROp op) = 0;
  // Waits for the work queued on the legacy default stream (the caller's, under our semantics).
  virtual Status synchronize() = 0;
  // CUDA IPC: a 64-byte handle for a cudaMalloc'd allocation, its mapping in a peer process.
  static constexpr size_t kIpcHandleBytes = 64;
  virtual Status ipc_export(void* base, void* handle_out) = 0;
  // kAgain: the allocation is mapped here already (an older mapping of memory since freed).
  virtual Status ipc_open(const void* handle, void** out) = 0;
  virtual void ipc_close(void* mapped) = 0;
  virtual bool can_access_peer(int device, int peer_device) = 0;
  // The GPU's UUID: tells whether two processes share one GPU, whatever their device numbers.
  virtual Status device_uuid(int device, std::string* out) = 0;
  // Synchronous memset to 0 of device memory.
  virtual Status zero(void* dst, size_t bytes) = 0;
  // Runs one low-latency collective (ll_protocol.h) and waits for it: kTimeout names a peer that
  // did not push its data in time; kMismatch, a peer that made another call (then in *fault).
  virtual Status run_ll(int device, const LlCall& call, LlFault* fault) = 0;
  // GPUDirect RDMA writes from a NIC land where a kernel on GPUs before Hopper may not yet see
  // them (aws-ofi-nccl flushes on p4d's A100, not on p5's H100): whether `device` needs a flush
  // after such writes, and the flush (cuFlushGPUDirectRDMAWrites, synchronous).
  virtual bool network_writes_need_flush(int /*device*/) { return false; }
  virtual Status flush_network_writes(int /*device*/) { return Status::ok(); }
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

// A GPU runtime whose "device" is host memory, for the engine's GPU paths on machines without a
// GPU: streams and staging slots per call, the staged fabric path and the path through host
// copies. By default CUDA IPC and the low-latency protocol are not offered, as where GPUs cannot
// reach each other; with in_process_ipc, for ranks that are threads of one process, a "handle"
// is the address itself and the protocol runs on the host (host_ll_protocol.h). Counts the
// local-operation sets, and the low-latency calls, that calls held at once.
#pragma once
#include <atomic>
#include <memory>

#include "gpu/gpu_runtime.h"

namespace efacoll {
namespace testing {

class HostGpuRuntime : public GpuRuntime {
 public:
  // Shared by the runtimes of one test's ranks: the most calls any rank had under way at once.
  struct Counts {
    std::atomic<int> most_at_once{0};
    std::atomic<int> ll_calls{0}, ll_most_at_once{0};
    std::atomic<int> ll_lent{0};  // low-latency calls that lent the lock (LlCall::lends_lock)
  };
  explicit HostGpuRuntime(std::shared_ptr<Counts> counts, bool in_process_ipc = false)
      : counts_(std::move(counts)), ipc_(in_process_ipc) {}

  Status acquire_local_ops(int device, LocalOps** out) override;
  void release_local_ops(int device, LocalOps* ops) override;
  Status alloc_device(int device, size_t bytes, void** out) override;
  void free_device(int device, void* ptr) override;
  Status alloc_pinned(size_t bytes, void** out) override;
  void free_pinned(void* ptr) override;
  Status copy(void* dst, const void* src, size_t bytes) override;
  Status copy_2d(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                 size_t height) override;
  Status reduce(void* dst, const void* a, const void* b, size_t count, DType type, ROp op) override;
  Status synchronize() override { return Status::ok(); }
  Status ipc_export(void* base, void* handle_out) override;
  Status ipc_open(const void* handle, void** out) override;
  void ipc_close(void*) override {}
  bool can_access_peer(int, int) override { return ipc_; }
  Status device_uuid(int device, std::string* out) override;
  Status zero(void* dst, size_t bytes) override;
  Status run_ll(int device, const LlCall& call, LlFault* fault) override;
  int set_device(int device) override { return device; }

 private:
  std::shared_ptr<Counts> counts_;
  const bool ipc_;
  std::atomic<int> held_{0}, ll_held_{0};
};

}  // namespace testing
}  // namespace efacoll

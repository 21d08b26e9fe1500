// A GPU runtime whose "device" is host memory, for the engine's GPU paths on machines without a
// GPU: streams and staging slots per call, the staged fabric path and the path through host
// copies. By default CUDA IPC and the low-latency protocol are not offered, as where GPUs cannot
// reach each other; with in_process_ipc, for ranks that are threads of one process, a "handle"
// is the address itself and the protocol runs on the host (host_ll_protocol.h). Counts the
// local-operation sets, and the low-latency calls, that calls held at once. With
// frees_wait_for_kernels, a free (or an IPC close) waits as cudaFree, cudaFreeHost and
// cudaIpcCloseMemHandle do: for the low-latency calls under way on this "device" when it began,
// one waiting for its peers too.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "gpu/gpu_runtime.h"

namespace efacoll {
namespace testing {

class HostGpuRuntime : public GpuRuntime {
 public:
  // Shared by the runtimes of one test's ranks: the most calls any rank had under way at once.
  struct Counts {
    // With keep_freed, freed memory (device and pinned) is filled with 0xdd and kept until the
    // Counts go: a later use is seen (in_freed_memory) instead of corrupting the heap.
    explicit Counts(bool keep_freed = false) : keep_freed(keep_freed) {}
    ~Counts();
    bool in_freed_memory(const void* p, size_t bytes = 1) const;

    std::atomic<int> most_at_once{0};
    std::atomic<int> ll_calls{0}, ll_most_at_once{0};
    std::atomic<int> ll_lent{0};       // low-latency calls that lent the lock (LlCall::lends_lock)
    std::atomic<int> frees_waited{0};  // frees (and IPC closes) that waited for a low-latency call
    std::atomic<int> ipc_opens{0}, ipc_closes{0};  // every mapping opened must be closed once
    std::atomic<int> flushes{0};                   // flush_network_writes
    const bool keep_freed;
    mutable std::mutex memory_mutex;
    std::map<uintptr_t, size_t> live, freed;  // guarded by memory_mutex: sizes by address
  };
  explicit HostGpuRuntime(std::shared_ptr<Counts> counts, bool in_process_ipc = false,
                          bool frees_wait_for_kernels = false)
      : counts_(std::move(counts)), ipc_(in_process_ipc), frees_wait_(frees_wait_for_kernels) {}

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
  Status synchronize() override;
  Status ipc_export(void* base, void* handle_out) override;
  Status ipc_open(const void* handle, void** out) override;
  // Waits as the frees do: cudaIpcCloseMemHandle waits for the process's kernels too (measured,
  // gpu_memory_to_free.h).
  void ipc_close(void*) override {
    wait_for_kernels();
    ++counts_->ipc_closes;
  }
  bool can_access_peer(int, int) override { return ipc_; }
  Status device_uuid(int device, std::string* out) override;
  Status zero(void* dst, size_t bytes) override;
  Status run_ll(int device, const LlCall& call, LlFault* fault) override;
  int set_device(int device) override { return device; }
  Status flush_network_writes(int) override {
    ++counts_->flushes;
    return Status::ok();
  }

  // Ranks that share one GPU: every rank's device_uuid is the same.
  bool one_shared_gpu = false;
  // Sleeps standing in for processes taking turns on a shared GPU: in synchronize() (IPC
  // direct's first step) and in each copy to or from pinned host memory (the host path's).
  std::chrono::microseconds synchronize_wait{0}, pinned_copy_wait{0};
  // A device allocation of exactly this many bytes fails (0: none), as on a full GPU.
  size_t refuse_device_bytes = 0;

 private:
  void wait_for_kernels();
  void release(void* ptr);
  bool in_pinned(const void* p) const;

  std::shared_ptr<Counts> counts_;
  const bool ipc_, frees_wait_;
  std::atomic<int> held_{0}, ll_held_{0};
  mutable std::mutex pinned_mutex_;
  std::map<uintptr_t, size_t> pinned_;  // this runtime's pinned blocks: sizes by address
  // The low-latency calls under way, numbered as they started.
  std::mutex ll_mutex_;
  std::condition_variable ll_ended_;
  uint64_t ll_started_ = 0;
  std::set<uint64_t> ll_running_;
};

}  // namespace testing
}  // namespace efacoll

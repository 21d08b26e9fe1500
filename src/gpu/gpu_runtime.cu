#include <cuda_runtime.h>

#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "gpu/gpu_reduce.h"
#include "gpu/gpu_runtime.h"
#include "gpu/ll_kernel.h"
#include "gpu/memory_kind.h"

namespace efacoll {
namespace {

Status cuda_error(const char* call, cudaError_t err) {
  // A failed call also sets the thread's last error, which the next kernel launch check would
  // report as its own: clear it here.
  cudaGetLastError();
  return Status(Code::kCuda, std::string(call) + ": " + cudaGetErrorName(err) + " (" +
                                 cudaGetErrorString(err) + ")");
}

#define EFACOLL_CUDA(call)                                   \
  do {                                                       \
    cudaError_t err_ = (call);                               \
    if (err_ != cudaSuccess) return cuda_error(#call, err_); \
  } while (0)

// One device's streams: copies to the host, copies to the device and kernels each have their
// own, so that the pipeline's directions overlap. The executor orders dependent operations.
class GpuLocalOps : public LocalOps {
 public:
  Status init() {
    // Blocking streams: their work starts after work the caller queued on the legacy default
    // stream, as with MPIs whose CUDA copies are synchronous (codes rely on memset-then-MPI).
    // Work on the caller's other streams must be finished by the caller, as MPI asks.
    for (cudaStream_t* s : {&to_host_, &to_device_, &compute_}) {
      EFACOLL_CUDA(cudaStreamCreateWithFlags(s, cudaStreamDefault));
    }
    return Status::ok();
  }
  ~GpuLocalOps() override {
    for (cudaStream_t s : {to_host_, to_device_, compute_})
      if (s) cudaStreamDestroy(s);
    for (cudaEvent_t e : free_events_) cudaEventDestroy(e);
  }

  Status reduce(void* dst, const void* a, const void* b, size_t count, DType type, ROp op,
                Completion* completion) override {
    EFACOLL_RETURN_IF_ERROR(gpu_reduce(dst, a, b, count, type, op, compute_));
    return track(compute_, completion, count * dtype_size(type));
  }

  Status copy(void* dst, const void* src, size_t bytes, CopyKind kind,
              Completion* completion) override {
    if (kind == CopyKind::kHostToHost) {
      std::memmove(dst, src, bytes);
      completion->fn(completion, Status::ok(), bytes);
      return Status::ok();
    }
    cudaStream_t s = kind == CopyKind::kDeviceToHost   ? to_host_
                     : kind == CopyKind::kHostToDevice ? to_device_
                                                       : compute_;
    EFACOLL_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s));
    return track(s, completion, bytes);
  }

  Status progress(int* completed) override {
    *completed = 0;
    for (auto it = pending_.begin(); it != pending_.end();) {
      cudaError_t err = cudaEventQuery(it->event);
      if (err == cudaErrorNotReady) {
        ++it;
        continue;
      }
      Pending p = *it;
      it = pending_.erase(it);
      free_events_.push_back(p.event);
      ++*completed;
      p.completion->fn(p.completion,
                       err == cudaSuccess ? Status::ok() : cuda_error("GPU operation", err),
                       p.bytes);
    }
    return Status::ok();
  }

  Status finish() override {
    for (cudaStream_t s : {to_host_, to_device_, compute_}) EFACOLL_CUDA(cudaStreamSynchronize(s));
    return Status::ok();
  }

 private:
  struct Pending {
    cudaEvent_t event;
    Completion* completion;
    size_t bytes;
  };

  Status track(cudaStream_t s, Completion* completion, size_t bytes) {
    cudaEvent_t e;
    if (free_events_.empty()) {
      EFACOLL_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    } else {
      e = free_events_.back();
      free_events_.pop_back();
    }
    cudaError_t err = cudaEventRecord(e, s);
    if (err != cudaSuccess) {
      free_events_.push_back(e);
      return cuda_error("cudaEventRecord", err);
    }
    pending_.push_back({e, completion, bytes});
    return Status::ok();
  }

  cudaStream_t to_host_ = nullptr, to_device_ = nullptr, compute_ = nullptr;
  std::deque<Pending> pending_;
  std::vector<cudaEvent_t> free_events_;
};

// No call's sequence (they count from EFACOLL_IPC_LL_SEQ_START, far below).
constexpr uint64_t kLlNotDone = ~uint64_t(0);

class CudaRuntime : public GpuRuntime {
 public:
  ~CudaRuntime() override {
    for (auto& kv : ops_) {
      int previous = set_device(kv.first);
      kv.second.all.clear();
      set_device(previous);
    }
    for (auto& kv : ll_) {
      int previous = set_device(kv.first);
      kv.second.all.clear();
      set_device(previous);
    }
  }

  Status acquire_local_ops(int device, LocalOps** out) override {
    std::lock_guard<std::mutex> lock(mutex_);
    GpuLocalOps* ops = nullptr;
    EFACOLL_RETURN_IF_ERROR(ops_[device].take(&ops));
    *out = ops;
    return Status::ok();
  }
  void release_local_ops(int device, LocalOps* ops) override {
    std::lock_guard<std::mutex> lock(mutex_);
    ops_[device].idle.push_back(static_cast<GpuLocalOps*>(ops));
  }

  Status alloc_device(int device, size_t bytes, void** out) override {
    EFACOLL_CUDA(cudaMalloc(out, bytes ? bytes : 1));
    return Status::ok();
  }
  void free_device(int, void* ptr) override { cudaFree(ptr); }

  Status alloc_pinned(size_t bytes, void** out) override {
    // Portable: usable from every device's streams.
    EFACOLL_CUDA(cudaHostAlloc(out, bytes ? bytes : 1, cudaHostAllocPortable));
    return Status::ok();
  }
  void free_pinned(void* ptr) override { cudaFreeHost(ptr); }

  // cudaMemcpy returns before a device-to-device copy is done: wait for it explicitly, since
  // callers publish the destination (to peers, through a barrier) right after.
  Status copy(void* dst, const void* src, size_t bytes) override {
    EFACOLL_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, nullptr));
    EFACOLL_CUDA(cudaStreamSynchronize(nullptr));
    return Status::ok();
  }

  Status copy_2d(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                 size_t height) override {
    if (width == 0 || height == 0) return Status::ok();
    EFACOLL_CUDA(
        cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, cudaMemcpyDefault, nullptr));
    EFACOLL_CUDA(cudaStreamSynchronize(nullptr));
    return Status::ok();
  }

  Status reduce(void* dst, const void* a, const void* b, size_t count, DType type,
                ROp op) override {
    EFACOLL_RETURN_IF_ERROR(gpu_reduce(dst, a, b, count, type, op, nullptr));
    EFACOLL_CUDA(cudaStreamSynchronize(nullptr));
    return Status::ok();
  }

  Status synchronize() override {
    EFACOLL_CUDA(cudaStreamSynchronize(cudaStreamLegacy));
    return Status::ok();
  }

  Status ipc_export(void* base, void* handle_out) override {
    static_assert(sizeof(cudaIpcMemHandle_t) == kIpcHandleBytes, "CUDA IPC handle size");
    EFACOLL_CUDA(cudaIpcGetMemHandle(static_cast<cudaIpcMemHandle_t*>(handle_out), base));
    return Status::ok();
  }
  Status ipc_open(const void* handle, void** out) override {
    cudaIpcMemHandle_t h;
    std::memcpy(&h, handle, sizeof(h));
    cudaError_t err = cudaIpcOpenMemHandle(out, h, cudaIpcMemLazyEnablePeerAccess);
    if (err == cudaErrorAlreadyMapped) {
      cudaGetLastError();
      return Status(Code::kAgain, "CUDA IPC memory already mapped");
    }
    if (err != cudaSuccess) return cuda_error("cudaIpcOpenMemHandle", err);
    return Status::ok();
  }
  void ipc_close(void* mapped) override { cudaIpcCloseMemHandle(mapped); }
  bool can_access_peer(int device, int peer_device) override {
    if (device == peer_device) return true;
    int can = 0;
    return cudaDeviceCanAccessPeer(&can, device, peer_device) == cudaSuccess && can;
  }

  bool network_writes_need_flush(int device) override {
    int major = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess)
      return true;  // unknown: flushing is only slower
    return major < 9;
  }

  Status flush_network_writes(int device) override {
    // cuFlushGPUDirectRDMAWrites(CURRENT_CTX target, TO_OWNER scope), through the driver table
    // memory_kind loaded: the library links no libcuda.
    using Flush = int (*)(int, int);
    static const auto flush = reinterpret_cast<Flush>(
        cuda_driver_function("cuFlushGPUDirectRDMAWrites"));
    if (!flush) return Status(Code::kCuda, "the CUDA driver has no cuFlushGPUDirectRDMAWrites");
    DeviceGuard on_device(this, device);
    const int rc = flush(/*CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX=*/0,
                         /*CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER=*/100);
    if (rc != 0)
      return Status(Code::kCuda, "cuFlushGPUDirectRDMAWrites failed with CUDA error " +
                                     std::to_string(rc));
    return Status::ok();
  }

  Status device_uuid(int device, std::string* out) override {
    cudaDeviceProp prop;
    EFACOLL_CUDA(cudaGetDeviceProperties(&prop, device));
    out->assign(prop.uuid.bytes, sizeof(prop.uuid.bytes));
    return Status::ok();
  }

  Status zero(void* dst, size_t bytes) override {
    EFACOLL_CUDA(cudaMemsetAsync(dst, 0, bytes, nullptr));
    EFACOLL_CUDA(cudaStreamSynchronize(nullptr));
    return Status::ok();
  }

  Status run_ll(int device, const LlCall& call, LlFault* fault_out) override {
    if (call.segments == 0) return Status::ok();
    LlResources* r = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      EFACOLL_RETURN_IF_ERROR(ll_[device].take(&r));
    }
    const Status st = run_ll_on(*r, call, fault_out);
    // After a timeout or a mismatch the kernel has stored its done word and ended. After any
    // other failure it may still run or have left its counter half counted: those resources
    // stay out of the pool (the destructor frees them).
    if (st.is_ok() || st.code() == Code::kTimeout || st.code() == Code::kMismatch) {
      std::lock_guard<std::mutex> lock(mutex_);
      ll_[device].idle.push_back(r);
    }
    return st;
  }

  int set_device(int device) override {
    int previous = 0;
    cudaGetDevice(&previous);
    if (device >= 0 && device != previous) cudaSetDevice(device);
    return previous;
  }

 private:
  // One call's kernel streams and signal words. Calls of several threads, which lend the
  // engine's lock while their kernels wait for the peers, each take their own: kernels that the
  // ranks' threads started in different orders then wait for their peers side by side, where
  // one stream would queue the second behind the first.
  struct LlResources {
    // Blocking: the kernel starts after the work the caller queued on the legacy default
    // stream, like the copies.
    cudaStream_t stream = nullptr;
    // Non-blocking, ordered after the legacy stream's work so far through legacy_done, for calls
    // that lend the lock: another thread's copy on the legacy stream must not wait for a kernel
    // that waits for peers, whose own kernels may wait for that thread's call.
    cudaStream_t apart = nullptr;
    // Recorded on `stream`, not on the legacy stream: work on a blocking stream waits for the
    // legacy stream's earlier work only, where a legacy-stream record would also wait for every
    // blocking stream's, and asking the legacy stream anything costs a call about 10 us
    // (ll_stream_bench, one H200, 8 bytes: 26 against 16 us; recorded here, 15-16 against 14-15).
    cudaEvent_t legacy_done = nullptr;
    LlSignal signal;

    Status init() {
      EFACOLL_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamDefault));
      EFACOLL_CUDA(cudaStreamCreateWithFlags(&apart, cudaStreamNonBlocking));
      EFACOLL_CUDA(cudaEventCreateWithFlags(&legacy_done, cudaEventDisableTiming));
      void* words = nullptr;
      EFACOLL_CUDA(
          cudaHostAlloc(&words, 3 * sizeof(uint64_t), cudaHostAllocPortable | cudaHostAllocMapped));
      std::memset(words, 0, 3 * sizeof(uint64_t));
      signal.done = static_cast<uint64_t*>(words);
      signal.fault = signal.done + 1;
      signal.heartbeat = signal.done + 2;
      void* counter = nullptr;
      EFACOLL_CUDA(cudaMalloc(&counter, sizeof(unsigned)));
      signal.arrivals = static_cast<unsigned*>(counter);
      // On its own non-blocking stream: a device-wide wait here would wait for other threads'
      // kernels, which may wait for peers that wait for this call.
      EFACOLL_CUDA(cudaMemsetAsync(counter, 0, sizeof(unsigned), apart));
      EFACOLL_CUDA(cudaStreamSynchronize(apart));
      return Status::ok();
    }
    ~LlResources() {
      for (cudaStream_t s : {stream, apart})
        if (s) cudaStreamDestroy(s);
      if (legacy_done) cudaEventDestroy(legacy_done);
      if (signal.done) cudaFreeHost(signal.done);
      if (signal.arrivals) cudaFree(signal.arrivals);
    }
  };

  Status run_ll_on(LlResources& r, const LlCall& call, LlFault* fault_out) {
    *static_cast<volatile uint64_t*>(r.signal.fault) = 0;
    // The resources go from call to call, of every communicator, and each communicator counts
    // its sequence from the same start: only this call's kernel may set the word to its own.
    *static_cast<volatile uint64_t*>(r.signal.done) = kLlNotDone;
    cudaStream_t stream = r.stream;
    if (call.lends_lock) {
      EFACOLL_CUDA(cudaEventRecord(r.legacy_done, r.stream));
      EFACOLL_CUDA(cudaStreamWaitEvent(r.apart, r.legacy_done, 0));
      stream = r.apart;
    }
    if (call.split) {
      EFACOLL_RETURN_IF_ERROR(ll_launch(call, kLlPush, r.signal, stream));
      EFACOLL_RETURN_IF_ERROR(ll_launch(call, kLlFinish, r.signal, stream));
    } else {
      EFACOLL_RETURN_IF_ERROR(ll_launch(call, kLlPush | kLlFinish, r.signal, stream));
    }
    EFACOLL_RETURN_IF_ERROR(wait_done(r.signal, stream, call));
    const LlFault fault = ll_fault(*static_cast<volatile uint64_t*>(r.signal.fault));
    if (fault.kind == LlFault::kSilent) {
      return Status(Code::kTimeout, "rank " + std::to_string(fault.peer) +
                                        " did not send its data (low-latency protocol, call " +
                                        std::to_string(call.seq) + ")");
    }
    if (fault.kind == LlFault::kOtherCall) {
      // The caller says what differed: it knows the call (core/call_signature.h).
      *fault_out = fault;
      return Status(Code::kMismatch, "rank " + std::to_string(fault.peer) +
                                         " made another call (low-latency protocol)");
    }
    return Status::ok();
  }

  // Polls the done word: it turns within microseconds of the kernel's end, sooner than a stream
  // synchronisation returns. The stream is asked now and then, so that a failed launch or a
  // faulting kernel (which never signals) is reported; long waits (a late peer) yield the CPU.
  // Each ask raises the heartbeat, which tells the kernel this process is not stopped.
  Status wait_done(const LlSignal& signal, cudaStream_t stream, const LlCall& call) {
    const volatile uint64_t* done = signal.done;
    volatile uint64_t* heartbeat = signal.heartbeat;
    const auto start = std::chrono::steady_clock::now();
    for (unsigned spin = 0; *done != call.seq; ++spin) {
      if ((spin & 255) != 255) continue;
      *heartbeat = *heartbeat + 1;
      cudaError_t err = cudaStreamQuery(stream);
      if (err != cudaSuccess && err != cudaErrorNotReady)
        return cuda_error("low-latency kernel", err);
      if (err == cudaSuccess && *done != call.seq) {
        return Status(Code::kInternal, "low-latency kernel ended without signalling");
      }
      const auto waited = std::chrono::steady_clock::now() - start;
      if (waited > std::chrono::microseconds(200)) std::this_thread::yield();
      if (waited > std::chrono::milliseconds(20)) {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
    return Status::ok();
  }

  // One device's resources of calls under way, and the idle ones the next calls take (the caller
  // holds mutex_). T has init(); a T that is not given back stays in `all` until the end.
  template <typename T>
  struct CallPool {
    std::vector<std::unique_ptr<T>> all;
    std::vector<T*> idle;
    Status take(T** out) {
      if (idle.empty()) {
        auto made = std::make_unique<T>();
        EFACOLL_RETURN_IF_ERROR(made->init());
        idle.push_back(made.get());
        all.push_back(std::move(made));
      }
      *out = idle.back();
      idle.pop_back();
      return Status::ok();
    }
  };
  std::mutex mutex_;
  std::map<int, CallPool<GpuLocalOps>> ops_;
  std::map<int, CallPool<LlResources>> ll_;
};

}  // namespace

std::unique_ptr<GpuRuntime> make_gpu_runtime(std::string* why_not) {
  // Ask the driver first: the runtime would create a context just to find no device.
  if (!cuda_driver_available(why_not)) return nullptr;
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    if (why_not) {
      *why_not = err != cudaSuccess ? std::string("no usable GPU: ") + cudaGetErrorString(err)
                                    : std::string("no GPU visible to this process");
    }
    return nullptr;
  }
  return std::make_unique<CudaRuntime>();
}

}  // namespace efacoll

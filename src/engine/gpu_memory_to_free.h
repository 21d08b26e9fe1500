// GPU memory efacoll no longer uses. cudaFree and cudaFreeHost wait for the whole device, a
// low-latency kernel waiting for its peers included; under
// MPI_THREAD_MULTIPLE that kernel's peers may wait for this thread's next call, which a free
// holds up whether or not it holds the engine's lock. So the engine frees such memory only
// while none of its low-latency kernels is under way (EngineCore::give_back_gpu_memory).
// cudaIpcCloseMemHandle waits for this process's kernels too (2 processes on one H200,
// bench/ipc_close_wait.py, docs/benchmarks.md: 290 ms behind a 300 ms kernel of its own, as cudaFree;
// 0.16 ms behind the exporter's), so peers' memory mapped here is closed the same way. Only
// IpcMappings' reopen closes at once what is in its way (EngineCore::close_ipc_mappings_now), as it
// always did, and so may still wait for those kernels. Opening a peer's memory, exporting,
// allocating, creating streams and events do not wait for them (bench/cuda_call_wait.py, same
// GPU and day).
#pragma once
#include <cstddef>
#include <vector>

#include "gpu/gpu_runtime.h"

namespace efacoll {

struct GpuMemoryToFree {
  enum class Kind {
    kDevice,      // cudaFree, on device `ordinal`
    kPinned,      // cudaFreeHost
    kIpcMapping,  // cudaIpcCloseMemHandle: a peer's memory, mapped here (bytes: 0, not ours)
  };
  struct Block {
    Kind kind = Kind::kDevice;
    int ordinal = -1;
    void* ptr = nullptr;
    size_t bytes = 0;
  };
  std::vector<Block> blocks;

  static GpuMemoryToFree device_memory(int ordinal, void* p, size_t bytes) {
    GpuMemoryToFree m;
    m.add_device(ordinal, p, bytes);
    return m;
  }
  static GpuMemoryToFree pinned_memory(void* p, size_t bytes) {
    GpuMemoryToFree m;
    m.add_pinned(p, bytes);
    return m;
  }
  static GpuMemoryToFree ipc_mapping(void* mapped) {
    GpuMemoryToFree m;
    m.add_ipc_mapping(mapped);
    return m;
  }
  void add_device(int ordinal, void* p, size_t bytes) {
    blocks.push_back({Kind::kDevice, ordinal, p, bytes});
  }
  void add_pinned(void* p, size_t bytes) { blocks.push_back({Kind::kPinned, -1, p, bytes}); }
  void add_ipc_mapping(void* mapped) { blocks.push_back({Kind::kIpcMapping, -1, mapped, 0}); }
  bool empty() const { return blocks.empty(); }
  size_t bytes() const {
    size_t sum = 0;
    for (const Block& b : blocks) sum += b.bytes;
    return sum;
  }
  size_t ipc_mappings() const {
    size_t n = 0;
    for (const Block& b : blocks) n += b.kind == Kind::kIpcMapping;
    return n;
  }
  void append(GpuMemoryToFree* more) {
    blocks.insert(blocks.end(), more->blocks.begin(), more->blocks.end());
    *more = GpuMemoryToFree();
  }
  void free_all(GpuRuntime* gpu) {
    for (const Block& b : blocks) release(gpu, b);
    *this = GpuMemoryToFree();
  }
  // Only the mappings, now: what IpcMappings needs out of its way to map a chunk again.
  void close_ipc_mappings(GpuRuntime* gpu) {
    std::vector<Block> rest;
    for (const Block& b : blocks) {
      if (b.kind == Kind::kIpcMapping)
        release(gpu, b);
      else
        rest.push_back(b);
    }
    blocks.swap(rest);
  }

 private:
  static void release(GpuRuntime* gpu, const Block& b) {
    switch (b.kind) {
      case Kind::kDevice:
        gpu->free_device(b.ordinal, b.ptr);
        break;
      case Kind::kPinned:
        gpu->free_pinned(b.ptr);
        break;
      case Kind::kIpcMapping:
        gpu->ipc_close(b.ptr);
        break;
    }
  }
};

}  // namespace efacoll

// GPU memory efacoll no longer uses. cudaFree and cudaFreeHost wait for the whole device, a
// low-latency kernel waiting for its peers included; under
// MPI_THREAD_MULTIPLE that kernel's peers may wait for this thread's next call, which a free
// holds up whether or not it holds the engine's lock. So the engine frees such memory only
// while none of its low-latency kernels is under way (Engine::give_back_gpu_memory).
// Peers' memory mapped through CUDA IPC is still closed at once: IpcMappings reopens an
// allocation right after closing its idle mapping ("already mapped" otherwise).
#pragma once
#include <cstddef>
#include <vector>

#include "gpu/gpu_runtime.h"

namespace efacoll {

struct GpuMemoryToFree {
  struct Block {
    bool pinned = false;  // pinned host memory, else device memory of `ordinal`
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
  void add_device(int ordinal, void* p, size_t bytes) {
    blocks.push_back({false, ordinal, p, bytes});
  }
  void add_pinned(void* p, size_t bytes) { blocks.push_back({true, -1, p, bytes}); }
  bool empty() const { return blocks.empty(); }
  size_t bytes() const {
    size_t sum = 0;
    for (const Block& b : blocks) sum += b.bytes;
    return sum;
  }
  void append(GpuMemoryToFree* more) {
    blocks.insert(blocks.end(), more->blocks.begin(), more->blocks.end());
    *more = GpuMemoryToFree();
  }
  void free_all(GpuRuntime* gpu) {
    for (const Block& b : blocks) {
      if (b.pinned)
        gpu->free_pinned(b.ptr);
      else
        gpu->free_device(b.ordinal, b.ptr);
    }
    *this = GpuMemoryToFree();
  }
};

}  // namespace efacoll

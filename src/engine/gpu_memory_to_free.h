// GPU memory efacoll no longer uses. cudaFree and cudaFreeHost wait for the whole device, a
// low-latency kernel waiting for its peers included; under
// MPI_THREAD_MULTIPLE that kernel's peers may wait for this thread's next call, which a free
// holds up whether or not it holds the engine's lock. So the engine frees such memory only
// while none of its low-latency kernels is under way (Engine::give_back_gpu_memory).
// Peers' memory mapped through CUDA IPC is still closed at once: IpcMappings reopens an
// allocation right after closing its idle mapping ("already mapped" otherwise).
#pragma once
#include <utility>
#include <vector>

#include "gpu/gpu_runtime.h"

namespace efacoll {

struct GpuMemoryToFree {
  std::vector<std::pair<int, void*>> device;  // (CUDA ordinal, pointer)
  std::vector<void*> pinned;

  static GpuMemoryToFree device_memory(int ordinal, void* p) {
    GpuMemoryToFree m;
    m.device.emplace_back(ordinal, p);
    return m;
  }
  static GpuMemoryToFree pinned_memory(void* p) {
    GpuMemoryToFree m;
    m.pinned.push_back(p);
    return m;
  }
  bool empty() const { return device.empty() && pinned.empty(); }
  void append(GpuMemoryToFree* more) {
    device.insert(device.end(), more->device.begin(), more->device.end());
    pinned.insert(pinned.end(), more->pinned.begin(), more->pinned.end());
    *more = GpuMemoryToFree();
  }
  void free_all(GpuRuntime* gpu) {
    for (auto& [ordinal, p] : device) gpu->free_device(ordinal, p);
    for (void* p : pinned) gpu->free_pinned(p);
    *this = GpuMemoryToFree();
  }
};

}  // namespace efacoll

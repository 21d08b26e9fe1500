// A multi-node communicator's parts for GPU allreduce: the ranks of this node, the ranks of the
// same local index on every node, and device buffers for this rank's slice.
#pragma once
#include <cstdint>
#include <memory>

#include "efacoll/engine.h"
#include "gpu/gpu_runtime.h"

namespace efacoll {

// A device buffer that only grows; its CUDA buffer id lets peers keep it mapped.
struct GrowingDeviceBuffer {
  GpuRuntime* gpu = nullptr;
  int device = -1;
  void* ptr = nullptr;
  size_t bytes = 0;
  uint64_t buffer_id = 0;
  // Grown by Comm::grow; its communicator's destructor takes the memory (Comm::take_gpu_memory).
  ~GrowingDeviceBuffer() {
    if (ptr) gpu->free_device(device, ptr);
  }
};

struct HierState {
  bool usable = false;
  int device = -1;
  std::unique_ptr<Comm> node;   // this node's ranks, in order
  std::unique_ptr<Comm> cross;  // one rank per node, all of the same local index
  GrowingDeviceBuffer slice, gathered;
};

}  // namespace efacoll

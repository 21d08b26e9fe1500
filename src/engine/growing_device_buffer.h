// A device buffer of a communicator's that only grows (CommCore::grow): its GPU scratch, a mixed
// call's device copies of host buffers, a hierarchical call's slices. Its CUDA buffer id lets
// peers keep it mapped and names its cached registration (but for the scratch's: the
// communicator's scratch_id_, which the host scratch shares).
#pragma once
#include <cstddef>
#include <cstdint>

#include "gpu/gpu_runtime.h"

namespace efacoll {

struct GrowingDeviceBuffer {
  GpuRuntime* gpu = nullptr;
  int device = -1;
  void* ptr = nullptr;
  size_t bytes = 0;
  uint64_t buffer_id = 0;
  // Its communicator's destructor takes the memory (CommCore::take_gpu_memory); a failed call may
  // retire it (comm_late_writes.cc).
  ~GrowingDeviceBuffer() {
    if (ptr) gpu->free_device(device, ptr);
  }
};

}  // namespace efacoll

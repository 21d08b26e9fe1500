// What a communicator whose ranks share GPUs measured of IPC against the fabric
// (CommCore::measure_shared_gpu, tune/shared_gpu_paths.h), and the picks made from it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <unordered_map>

#include "engine/growing_device_buffer.h"
#include "tune/shared_gpu_paths.h"

namespace efacoll {

// Call shapes whose pick between IPC and the fabric is kept; past this, all are forgotten.
constexpr size_t kSharedPickShapes = 4096;

struct SharedGpuState {
  SharedGpuPaths paths;
  std::unordered_map<uint64_t, SharedGpuPick> picks;  // by call shape
  // The measurement's buffers, kept for the communicator's life: peers keep them mapped by
  // buffer id. CommCore::take_gpu_memory gives them back.
  GrowingDeviceBuffer probe_send, probe_recv;
};

}  // namespace efacoll

// Ranks of one node that share a GPU: which way a call on GPU buffers runs, IPC direct or the
// fabric through the host, from times measured on that communicator (Comm::measure_shared_gpu).
// Both paths wait for the GPU to turn from one process's context to another's, which the link
// figures cannot price: without MPS a time slice (2 ranks on one H200, 2026-12-04: IPC direct
// 480-600 us a call where 25 were predicted, the host path 180-300 where 5 were), with MPS a few
// microseconds. Each path's measured time over its model prediction (its extra) is interpolated
// between the measured sizes and added to its prediction at the call's size.
#pragma once
#include <cstddef>
#include <vector>

#include "efacoll/types.h"

namespace efacoll {

// The call sizes (bytes as the cost model reads them) each collective is measured at: latency-
// bound, the largest the host path takes by default (EFACOLL_GPU_HOST_PATH_MAX), and past it.
constexpr size_t kSharedGpuPointBytes[] = {1024, size_t(64) << 10, size_t(1) << 20};
constexpr size_t kSharedGpuPoints = sizeof(kSharedGpuPointBytes) / sizeof(kSharedGpuPointBytes[0]);

// Measured minus predicted microseconds at increasing sizes: linear in bytes between two points,
// held beyond the first and the last.
struct PathExtra {
  double bytes[kSharedGpuPoints] = {};
  double extra_us[kSharedGpuPoints] = {};
  size_t points = 0;
  void add(double at_bytes, double us);  // in increasing order of bytes
  double at(double call_bytes) const;    // 0 with no points
};

struct SharedGpuPaths {
  bool measured = false;
  PathExtra ipc[static_cast<int>(CollKind::kCount)];
  PathExtra fabric[static_cast<int>(CollKind::kCount)];
};

struct SharedGpuPick {
  bool fabric = false;  // the fabric (through the host) predicted faster than IPC direct
  double ipc_us = 0, fabric_us = 0;
  double fabric_extra_us = 0;  // the measured part of fabric_us
};

// The model's predictions for the call with each path's extra added; ties go to IPC direct.
SharedGpuPick pick_shared_gpu_path(const SharedGpuPaths& paths, CollKind kind, double bytes,
                                   double ipc_model_us, double fabric_model_us);

}  // namespace efacoll

// Ranks of one node that share a GPU: which way a call on GPU buffers runs, IPC (direct, or its
// rounds where it cannot) or the fabric, from times measured on that communicator
// (CommCore::measure_shared_gpu). Every way waits for the GPU to turn from one process's context to
// another's, which the link figures cannot price: without MPS a time slice (2 ranks on one H200,
// docs/benchmarks.md: IPC direct 220-610 us a call where 25-76 were predicted, the fabric 40-480 where
// 4-480 were), with MPS a few microseconds. Each way's measured time over the model's prediction
// (its extra; for the fabric, the time of the algorithm the trials would keep over the
// prediction of the model's pick) is interpolated between the measured sizes and added to the
// prediction at the call's size. The fabric has two ways for GPU buffers, measured apart: pinned
// host copies for calls in which no rank moves more than EFACOLL_GPU_HOST_PATH_MAX bytes, the
// staged pipeline above.
#pragma once
#include <cstddef>
#include <vector>

#include "efacoll/types.h"

namespace efacoll {

constexpr size_t kMaxSharedGpuPoints = 4;

// The call sizes (bytes as the cost model reads them) a collective is measured at, increasing:
// 1 KiB and the largest call the host copies take (a rank moving at most `host_path_max` bytes,
// every rank an equal block), twice that and 1 MiB (staged); each at least one float per rank.
std::vector<size_t> shared_gpu_points(CollKind kind, int nranks, size_t host_path_max);

// Measured minus predicted microseconds at increasing sizes: linear in bytes between two points,
// held beyond the first and the last.
struct PathExtra {
  double bytes[kMaxSharedGpuPoints] = {};
  double extra_us[kMaxSharedGpuPoints] = {};
  size_t points = 0;
  void add(double at_bytes, double us);  // in increasing order of bytes; past the capacity: none
  double at(double call_bytes) const;    // 0 with no points
};

// The call shapes measured apart: each collective, and reduce-scatter in place, which IPC runs
// in rounds through its workspaces instead of IPC direct (2 ranks on one H200 without MPS,
// docs/benchmarks.md: 400-630 us a call against 220-380) and the fabric on the input's own buffer.
struct SharedGpuShape {
  CollKind kind;
  bool inplace;
};
constexpr SharedGpuShape kSharedGpuShapes[] = {{CollKind::kAllreduce, false},
                                               {CollKind::kAllgather, false},
                                               {CollKind::kReduceScatter, false},
                                               {CollKind::kReduceScatter, true}};
constexpr int kNumSharedGpuShapes = sizeof(kSharedGpuShapes) / sizeof(kSharedGpuShapes[0]);
// The shape whose times price a call (in place, allreduce and allgather run as out of place).
int shared_gpu_shape(CollKind kind, bool inplace);

struct SharedGpuPaths {
  bool measured = false;
  // A rank could not make the buffers or plans, the ranks would time different calls, or an
  // exchange or timed call failed: the rule stands.
  bool given_up = false;
  // By shape (kSharedGpuShapes).
  PathExtra ipc[kNumSharedGpuShapes];
  PathExtra host_copies[kNumSharedGpuShapes];  // the fabric through pinned host copies
  PathExtra staged[kNumSharedGpuShapes];       // the fabric's staged pipeline
};

struct SharedGpuPick {
  bool fabric_faster = false;
  double ipc_us = 0, fabric_us = 0;
  double fabric_extra_us = 0;  // the measured part of fabric_us
};

// The model's predictions for a call of `shape` with each way's extra added (`via_host`: the
// fabric takes the call through pinned host copies); ties go to IPC direct.
SharedGpuPick pick_shared_gpu_path(const SharedGpuPaths& paths, int shape, double bytes,
                                   bool via_host, double ipc_model_us, double fabric_model_us);

}  // namespace efacoll

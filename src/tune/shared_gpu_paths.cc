#include "tune/shared_gpu_paths.h"

#include <algorithm>

namespace efacoll {

std::vector<size_t> shared_gpu_points(CollKind kind, int nranks, size_t host_path_max) {
  const size_t n = static_cast<size_t>(std::max(nranks, 1));
  const size_t unit = kind == CollKind::kAllreduce ? sizeof(float) : sizeof(float) * n;
  // Past 4 MiB no host-copies point is under 1 MiB; the cap keeps max * n from overflowing.
  const size_t max = std::min(host_path_max, size_t(4) << 20);
  // Allreduce: a rank sends and receives the whole vector; the others the whole and one block.
  size_t host_largest = kind == CollKind::kAllreduce ? max / 2 : max * n / (n + 1);
  host_largest -= host_largest % unit;
  const size_t one_mib = size_t(1) << 20;
  std::vector<size_t> points;
  for (size_t bytes : {size_t(1024), host_largest, 2 * host_largest, one_mib}) {
    // 0: no call takes the host copies; past 1 MiB, the 1 MiB point stands for it (on the
    // other series where that one has no point: pick_shared_gpu_path).
    if (bytes == 0 || bytes > one_mib) continue;
    points.push_back(std::max(bytes - bytes % unit, unit));
  }
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  if (points.size() > kMaxSharedGpuPoints) points.resize(kMaxSharedGpuPoints);
  return points;
}

void PathExtra::add(double at_bytes, double us) {
  if (points == kMaxSharedGpuPoints) return;
  bytes[points] = at_bytes;
  extra_us[points] = us;
  ++points;
}

double PathExtra::at(double call_bytes) const {
  if (points == 0) return 0;
  if (call_bytes <= bytes[0]) return extra_us[0];
  for (size_t i = 1; i < points; ++i) {
    if (call_bytes <= bytes[i]) {
      const double f = (call_bytes - bytes[i - 1]) / (bytes[i] - bytes[i - 1]);
      return extra_us[i - 1] + f * (extra_us[i] - extra_us[i - 1]);
    }
  }
  return extra_us[points - 1];
}

int shared_gpu_shape(CollKind kind, bool inplace) {
  int out_of_place = 0;
  for (int i = 0; i < kNumSharedGpuShapes; ++i) {
    const SharedGpuShape& shape = kSharedGpuShapes[i];
    if (shape.kind != kind) continue;
    if (shape.inplace == inplace) return i;
    if (!shape.inplace) out_of_place = i;  // stands for in place where that is not measured
  }
  return out_of_place;
}

SharedGpuPick pick_shared_gpu_path(const SharedGpuPaths& paths, int shape, double bytes,
                                   bool via_host, double ipc_model_us, double fabric_model_us) {
  SharedGpuPick pick;
  pick.ipc_us = ipc_model_us + paths.ipc[shape].at(bytes);
  // A series without points (every measured size on the other way: a host-copies limit of
  // 2 MiB or more, or of 0) borrows the other's.
  const PathExtra* fabric = via_host ? &paths.host_copies[shape] : &paths.staged[shape];
  if (fabric->points == 0) fabric = via_host ? &paths.staged[shape] : &paths.host_copies[shape];
  pick.fabric_extra_us = fabric->at(bytes);
  pick.fabric_us = fabric_model_us + pick.fabric_extra_us;
  pick.fabric_faster = paths.measured && !paths.given_up && pick.fabric_us < pick.ipc_us;
  return pick;
}

}  // namespace efacoll

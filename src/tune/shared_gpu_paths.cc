#include "tune/shared_gpu_paths.h"

namespace efacoll {

void PathExtra::add(double at_bytes, double us) {
  if (points == kSharedGpuPoints) return;
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

SharedGpuPick pick_shared_gpu_path(const SharedGpuPaths& paths, CollKind kind, double bytes,
                                   double ipc_model_us, double fabric_model_us) {
  const int k = static_cast<int>(kind);
  SharedGpuPick pick;
  pick.ipc_us = ipc_model_us + paths.ipc[k].at(bytes);
  pick.fabric_extra_us = paths.fabric[k].at(bytes);
  pick.fabric_us = fabric_model_us + pick.fabric_extra_us;
  pick.fabric = paths.measured && pick.fabric_us < pick.ipc_us;
  return pick;
}

}  // namespace efacoll

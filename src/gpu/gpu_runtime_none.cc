// Builds without the CUDA toolkit: no GPU runtime; GPU buffers are staged to MPI by the shim.
#include "gpu/gpu_runtime.h"

namespace efacoll {

std::unique_ptr<GpuRuntime> make_gpu_runtime(std::string* why_not) {
  if (why_not) *why_not = "efacoll was built without CUDA support";
  return nullptr;
}

}  // namespace efacoll

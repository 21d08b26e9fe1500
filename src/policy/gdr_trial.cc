#include "policy/gdr_trial.h"

#include "gpu/dmabuf.h"

namespace efacoll {

bool register_gpu_memory_by_dmabuf(int device, FabricOptions* options, std::string* why_not) {
  if (!dmabuf_usable(device, why_not)) return false;
  options->export_dmabuf = export_dmabuf;
  return true;
}

GpuRegistrationTrial try_gpu_registration(Transport* transport, GpuRuntime* gpu, int device) {
  constexpr size_t kTrialBytes = 64 * 1024;
  GpuRegistrationTrial trial;
  GpuRuntime::DeviceGuard on_device(gpu, device);
  void* buffer = nullptr;
  Status st = gpu->alloc_device(device, kTrialBytes, &buffer);
  if (!st.is_ok()) {
    trial.error = "no GPU memory for the trial: " + st.message();
    return trial;
  }
  MemRegion region;
  st = transport->register_memory(buffer, kTrialBytes, MemKind::kDevice, device, &region);
  if (st.is_ok()) {
    trial.ok = true;
    trial.how = region.by_dmabuf ? "dma-buf" : "address";
    transport->deregister_memory(&region);
  } else {
    trial.error = st.message();
  }
  gpu->free_device(device, buffer);
  return trial;
}

int trial_device(int current_device, int local_rank, int device_count) {
  if (current_device >= 0) return current_device;
  return device_count > 0 ? local_rank % device_count : 0;
}

}  // namespace efacoll

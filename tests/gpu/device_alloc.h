// How efacoll_mpi_gpu_tests allocates its GPU buffers (--device-memory): cudaMalloc, managed
// memory, or CUDA's virtual memory management (cuMemCreate + cuMemMap, as PyTorch's expandable
// segments allocate), the three kinds the fabric path must take or stage.
#pragma once
#include <cstddef>
#include <string>

namespace gputest {

enum class DeviceAlloc { kCudaMalloc, kManaged, kVmm };

// "cuda", "managed" or "vmm"; false for anything else.
bool parse_device_alloc(const std::string& name, DeviceAlloc* out);
const char* device_alloc_name(DeviceAlloc kind);

// On the current device. "" or what went wrong.
std::string device_alloc(DeviceAlloc kind, size_t bytes, void** out);
void device_free(DeviceAlloc kind, void* ptr);

}  // namespace gputest

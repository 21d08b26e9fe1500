#include "device_alloc.h"

#include <cuda.h>
#include <cuda_runtime.h>

#include <map>
#include <mutex>

namespace gputest {
namespace {

// Driver functions through the runtime: the test links no libcuda.
template <typename Fn>
Fn driver(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found;
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found) !=
          cudaSuccess ||
      found != cudaDriverEntryPointSuccess)
    return nullptr;
  return reinterpret_cast<Fn>(fn);
}

struct VmmBlock {
  CUmemGenericAllocationHandle handle;
  size_t size;
};
std::mutex g_vmm_mutex;
std::map<CUdeviceptr, VmmBlock> g_vmm;  // by mapped address

std::string vmm_alloc(size_t bytes, void** out) {
  auto granularity = driver<decltype(&cuMemGetAllocationGranularity)>("cuMemGetAllocationGranularity");
  auto create = driver<decltype(&cuMemCreate)>("cuMemCreate");
  auto reserve = driver<decltype(&cuMemAddressReserve)>("cuMemAddressReserve");
  auto map = driver<decltype(&cuMemMap)>("cuMemMap");
  auto set_access = driver<decltype(&cuMemSetAccess)>("cuMemSetAccess");
  if (!granularity || !create || !reserve || !map || !set_access)
    return "the CUDA driver lacks the virtual memory management API";
  int device = 0;
  cudaGetDevice(&device);
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  size_t grain = 0;
  if (granularity(&grain, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS || grain == 0)
    return "cuMemGetAllocationGranularity failed";
  const size_t size = (bytes + grain - 1) / grain * grain;
  CUmemGenericAllocationHandle handle;
  if (create(&handle, size, &prop, 0) != CUDA_SUCCESS) return "cuMemCreate failed";
  CUdeviceptr ptr = 0;
  if (reserve(&ptr, size, grain, 0, 0) != CUDA_SUCCESS) return "cuMemAddressReserve failed";
  if (map(ptr, size, 0, handle, 0) != CUDA_SUCCESS) return "cuMemMap failed";
  CUmemAccessDesc access = {};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  if (set_access(ptr, size, &access, 1) != CUDA_SUCCESS) return "cuMemSetAccess failed";
  std::lock_guard<std::mutex> lock(g_vmm_mutex);
  g_vmm[ptr] = {handle, size};
  *out = reinterpret_cast<void*>(ptr);
  return "";
}

void vmm_free(void* p) {
  VmmBlock block;
  {
    std::lock_guard<std::mutex> lock(g_vmm_mutex);
    auto it = g_vmm.find(reinterpret_cast<CUdeviceptr>(p));
    if (it == g_vmm.end()) return;
    block = it->second;
    g_vmm.erase(it);
  }
  cudaDeviceSynchronize();
  auto unmap = driver<decltype(&cuMemUnmap)>("cuMemUnmap");
  auto release = driver<decltype(&cuMemRelease)>("cuMemRelease");
  auto unreserve = driver<decltype(&cuMemAddressFree)>("cuMemAddressFree");
  const auto ptr = reinterpret_cast<CUdeviceptr>(p);
  if (unmap) unmap(ptr, block.size);
  if (release) release(block.handle);
  if (unreserve) unreserve(ptr, block.size);
}

}  // namespace

bool parse_device_alloc(const std::string& name, DeviceAlloc* out) {
  for (DeviceAlloc k : {DeviceAlloc::kCudaMalloc, DeviceAlloc::kManaged, DeviceAlloc::kVmm}) {
    if (name == device_alloc_name(k)) {
      *out = k;
      return true;
    }
  }
  return false;
}

const char* device_alloc_name(DeviceAlloc kind) {
  switch (kind) {
    case DeviceAlloc::kCudaMalloc:
      return "cuda";
    case DeviceAlloc::kManaged:
      return "managed";
    case DeviceAlloc::kVmm:
      return "vmm";
  }
  return "?";
}

std::string device_alloc(DeviceAlloc kind, size_t bytes, void** out) {
  cudaError_t err = cudaSuccess;
  switch (kind) {
    case DeviceAlloc::kCudaMalloc:
      err = cudaMalloc(out, bytes);
      break;
    case DeviceAlloc::kManaged:
      err = cudaMallocManaged(out, bytes);
      break;
    case DeviceAlloc::kVmm:
      return vmm_alloc(bytes, out);
  }
  return err == cudaSuccess ? "" : std::string(cudaGetErrorName(err)) + " (" +
                                       cudaGetErrorString(err) + ")";
}

void device_free(DeviceAlloc kind, void* ptr) {
  if (kind == DeviceAlloc::kVmm)
    vmm_free(ptr);
  else
    cudaFree(ptr);
}

}  // namespace gputest

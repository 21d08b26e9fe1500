#include "gpu/dmabuf.h"

#include <unistd.h>

#include "common/kernel_release.h"
#include "gpu/memory_kind.h"

namespace efacoll {
namespace {

// Driver ABI values (cuda.h), so that this file needs no CUDA headers.
using CUresult = int;
using CUdeviceptr = unsigned long long;
constexpr int kAttrDmaBufSupported = 124;      // CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED
constexpr int kHandleTypeDmaBufFd = 1;         // CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD
constexpr unsigned long long kMappingPcie = 1;  // CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE

using DeviceGetAttribute = CUresult (*)(int*, int, int);
using GetHandleForAddressRange = CUresult (*)(void*, CUdeviceptr, size_t, int, unsigned long long);
using GetAddressRange = CUresult (*)(CUdeviceptr*, size_t*, CUdeviceptr);

}  // namespace

bool kernel_imports_dmabuf(const std::string& release) {
  return kernel_release_at_least(release, 5, 12);
}

bool dmabuf_usable(int device, std::string* why_not) {
  auto attribute =
      reinterpret_cast<DeviceGetAttribute>(cuda_driver_function("cuDeviceGetAttribute"));
  auto exporter = cuda_driver_function("cuMemGetHandleForAddressRange");
  if (!attribute || !exporter) {
    *why_not = "the CUDA driver exports no dma-buf (before CUDA 11.7)";
    return false;
  }
  int supported = 0;
  if (attribute(&supported, kAttrDmaBufSupported, device < 0 ? 0 : device) != 0 || !supported) {
    *why_not = "the GPU driver reports no dma-buf support (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED)";
    return false;
  }
  const std::string release = running_kernel_release();
  if (!kernel_imports_dmabuf(release)) {
    *why_not = "kernel " + release + " cannot import dma-bufs into RDMA registrations (5.12 on)";
    return false;
  }
  return true;
}

Status export_dmabuf(const void* ptr, size_t bytes, DmabufRange* out) {
  auto range = reinterpret_cast<GetAddressRange>(cuda_driver_function("cuMemGetAddressRange_v2"));
  auto exporter = reinterpret_cast<GetHandleForAddressRange>(
      cuda_driver_function("cuMemGetHandleForAddressRange"));
  if (!range || !exporter) return Status(Code::kUnsupported, "no dma-buf export in this driver");
  // The whole allocation, widened to host pages: the driver exports nothing narrower.
  CUdeviceptr start = 0;
  size_t size = 0;
  CUresult rc = range(&start, &size, reinterpret_cast<CUdeviceptr>(ptr));
  if (rc != 0)
    return Status(Code::kCuda, "cuMemGetAddressRange failed with CUDA error " + std::to_string(rc));
  const CUdeviceptr page = static_cast<CUdeviceptr>(sysconf(_SC_PAGESIZE));
  const CUdeviceptr base = start & ~(page - 1);
  const CUdeviceptr end = (start + size + page - 1) & ~(page - 1);
  int fd = -1;
  // PCIe mapping first (what a NIC needs where the GPU also has another path); drivers that do
  // not know the flag answer invalid value or not supported.
  rc = exporter(&fd, base, end - base, kHandleTypeDmaBufFd, kMappingPcie);
  if (rc != 0) rc = exporter(&fd, base, end - base, kHandleTypeDmaBufFd, 0);
  if (rc != 0 || fd < 0) {
    return Status(Code::kCuda,
                  "cuMemGetHandleForAddressRange failed with CUDA error " + std::to_string(rc));
  }
  out->fd = fd;
  out->offset = reinterpret_cast<CUdeviceptr>(ptr) - base;
  out->base = reinterpret_cast<void*>(base);
  out->bytes = bytes;
  return Status::ok();
}

}  // namespace efacoll

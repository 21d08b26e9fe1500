// GPU memory as a dma-buf file descriptor (cuMemGetHandleForAddressRange), the way a NIC
// registers device memory without the peer-memory kernel module: libfabric's efa before 2.5
// registers a CUDA address only through nvidia-peermem, while images with dma-buf and without
// that module are common. Asked of the driver at run time, like everything in gpu/memory_kind.
#pragma once
#include <cstddef>
#include <string>

#include "efacoll/status.h"
#include "common/dmabuf_range.h"

namespace efacoll {

// Whether dma-buf can serve registrations on this machine: a driver that exports dma-bufs
// (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED on `device`) and a kernel whose RDMA stack imports them
// (Linux 5.12 on). why_not: the reason when not.
bool dmabuf_usable(int device, std::string* why_not);

// The dma-buf covering [ptr, ptr + bytes) of one allocation: the fd (the caller closes it), the
// offset of ptr in it and its page-aligned base address. kUnsupported where dmabuf_usable says no.
Status export_dmabuf(const void* ptr, size_t bytes, DmabufRange* out);

// Linux release strings such as "5.15.0-1051-aws": whether it is 5.12 or later.
bool kernel_imports_dmabuf(const std::string& release);

}  // namespace efacoll

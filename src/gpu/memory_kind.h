// What kind of memory a pointer refers to, asked of the CUDA driver (loaded at run time, so the
// same library runs where there is no GPU: everything is then host memory).
#pragma once
#include <cstdint>
#include <string>

#include "efacoll/status.h"
#include "efacoll/types.h"

namespace efacoll {

struct MemInfo {
  MemKind kind = MemKind::kHost;
  int device = -1;         // ordinal, for device and managed memory
  uint64_t buffer_id = 0;  // process-wide unique id of the allocation (0: unknown)
};

const char* mem_kind_name(MemKind k);

// Never fails: anything the driver does not know is host memory.
MemInfo query_memory(const void* ptr);

// Synchronous copy through the driver, in the context that owns `device_ptr` (either side of
// the copy). Works in builds without the CUDA toolkit: used to stage GPU data for MPI.
Status driver_copy(void* dst, const void* src, size_t bytes, const void* device_ptr);

// The start of the allocation that contains `ptr` (cuMemGetAddressRange): CUDA IPC handles
// name whole allocations.
Status driver_allocation_base(const void* ptr, void** base);

// The PCI address of the GPU whose context is current on this thread, if the process has
// chosen one already (false otherwise, or without a driver).
bool current_gpu_bus_id(std::string* bus_id);

// The device of the context current on this thread, or -1 (none yet, or no driver); and how
// many devices this process sees (0 without a driver).
int current_cuda_device();
int cuda_device_count();

// A CUDA driver function by its exported name, once the driver is loaded and initialised;
// nullptr without a driver or where this driver lacks it.
void* cuda_driver_function(const char* name);

// Whether a CUDA driver was found (the first query loads it); the reason when not.
bool cuda_driver_available(std::string* why_not = nullptr);

}  // namespace efacoll

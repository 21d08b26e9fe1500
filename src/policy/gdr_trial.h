// Whether the fabric can take this machine's GPU memory, found the only sure way: registering a
// small GPU buffer through it, as the first GPU call would. FI_HMEM in fi_getinfo's answer is
// not enough: from API 1.18 EFA offers it wherever CUDA loads, a libfabric without CUDA offers
// it on shm, and EFA before 2.5 registers GPU memory only through nvidia-peermem (dma-buf then
// serves, where the driver and kernel export it). Used at MPI_Init and by efacoll-doctor.
#pragma once
#include <string>

#include "gpu/gpu_runtime.h"
#include "transport/fabric/fabric_transport.h"
#include "transport/transport.h"

namespace efacoll {

struct GpuRegistrationTrial {
  bool ok = false;
  std::string how;    // when ok: "dma-buf" or "address"
  std::string error;  // when not: what failed, the provider's words included
};

// Registration through a dma-buf where the driver and kernel export GPU memory so (as
// aws-ofi-nccl does), for endpoints opened with `options`; false, with why, where GPU memory
// registers by address only. MPI_Init and efacoll-doctor both decide here.
bool register_gpu_memory_by_dmabuf(int device, FabricOptions* options, std::string* why_not);

// device: the CUDA ordinal to allocate on (see trial_device). Allocates, registers, deregisters
// and frees 64 KiB; changes nothing else.
GpuRegistrationTrial try_gpu_registration(Transport* transport, GpuRuntime* gpu, int device);

// The device a rank tries: the one its current context names, else local_rank modulo the
// devices it sees, the GPU a code that picks its device after MPI_Init will use (so that the
// trial makes no context on device 0 for every rank).
int trial_device(int current_device, int local_rank, int device_count);

}  // namespace efacoll

// The libfabric RDM transport: one endpoint per process, used by every communicator.
#pragma once
#include <functional>
#include <memory>

#include "common/dmabuf_range.h"
#include "transport/fabric/fabric_info.h"
#include "transport/transport.h"

namespace efacoll {

enum class Protocol {
  kAuto,      // one-sided where the provider writes natively (EFA with device RDMA write)
  kSendRecv,  // tagged messages only
  kRdma,      // one-sided writes for large messages; fails where the provider cannot
};

struct FabricOptions {
  Protocol protocol = Protocol::kAuto;
  size_t rdma_threshold = 65536;  // smaller messages stay two-sided (eager)
  // Exports GPU memory as a dma-buf (gpu/dmabuf.h). Where set, and libfabric has FI_MR_DMABUF
  // (API 1.20 on), GPU memory registers through it first, by address where that fails.
  std::function<Status(const void* ptr, size_t bytes, DmabufRange* out)> export_dmabuf;
};

// Opens fabric, domain, CQ, AV and endpoint for `info` (as returned by find_provider).
Status open_fabric_transport(const fi_info* info, const FabricOptions& options,
                             std::unique_ptr<Transport>* out);

}  // namespace efacoll

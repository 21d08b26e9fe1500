// The libfabric RDM transport: one endpoint per process, used by every communicator.
#pragma once
#include <memory>

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
};

// Opens fabric, domain, CQ, AV and endpoint for `info` (as returned by find_provider).
Status open_fabric_transport(const fi_info* info, const FabricOptions& options,
                             std::unique_ptr<Transport>* out);

}  // namespace efacoll

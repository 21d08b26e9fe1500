// The libfabric RDM transport: one endpoint per process, used by every communicator.
#pragma once
#include <memory>

#include "transport/fabric/fabric_info.h"
#include "transport/transport.h"

namespace efacoll {

// Opens fabric, domain, CQ, AV and endpoint for `info` (as returned by find_provider).
Status open_fabric_transport(const fi_info* info, std::unique_ptr<Transport>* out);

}  // namespace efacoll

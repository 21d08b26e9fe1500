// In-process transport for unit tests: endpoints of one LoopbackFabric exchange tagged messages
// through shared mailboxes, with the semantics the executor relies on from libfabric
// (unexpected messages buffered, truncation reported, cancellation).
#pragma once
#include <memory>
#include <mutex>
#include <vector>

#include "transport/transport.h"

namespace efacoll {

class LoopbackFabric;

std::shared_ptr<LoopbackFabric> make_loopback_fabric();
std::unique_ptr<Transport> make_loopback_transport(std::shared_ptr<LoopbackFabric> fabric);

}  // namespace efacoll

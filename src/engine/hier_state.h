// A multi-node communicator's parts for GPU allreduce: the ranks of this node, the ranks of the
// same local index on every node, and device buffers for this rank's slice.
#pragma once
#include <cstdint>
#include <memory>

#include "engine/comm_core.h"
#include "engine/growing_device_buffer.h"

namespace efacoll {

struct HierState {
  bool usable = false;
  int device = -1;
  std::unique_ptr<CommCore> node;   // this node's ranks, in order
  std::unique_ptr<CommCore> cross;  // one rank per node, all of the same local index
  GrowingDeviceBuffer slice, gathered;
};

}  // namespace efacoll

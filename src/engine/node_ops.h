// Runs one rank's operations of a node schedule (coll/node_schedule.h) on the GPU runtime, each
// NodeRef resolved to this process's address of that memory (its own, or a peer's mapped).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "coll/node_schedule.h"
#include "coll/ring_layout.h"
#include "efacoll/engine.h"
#include "efacoll/status.h"
#include "efacoll/types.h"

namespace efacoll {

class GpuRuntime;

// The call as the node schedules read it (IpcState's `half` left for the caller).
NodeCall node_call(const CollArgs& args, const RingArgs& ring);

// null: the memory is not mapped here (a schedule that names it is wrong).
using NodeAddress = std::function<uint8_t*(const NodeRef&)>;

Status run_node_ops(GpuRuntime* gpu, const std::vector<NodeOp>& ops, const NodeAddress& address,
                    DType dtype, ROp op);

}  // namespace efacoll

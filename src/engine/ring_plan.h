// How a call's vector splits into the ranks' blocks and what each rank sends and receives: the
// plan every path of CommCore::run_locked starts from, and the sizes the tuner reads from it.
#pragma once
#include <cstddef>

#include "coll/ring_layout.h"
#include "efacoll/engine.h"
#include "efacoll/status.h"
#include "tune/algo.h"

namespace efacoll {

struct RingPlan {
  RingArgs ring;
  size_t send_bytes = 0, recv_bytes = 0;
  size_t result_bytes = 0;  // what the caller finds in recv afterwards
};

Status plan_ring(const CollArgs& args, int rank, int size, size_t chunk_bytes, RingPlan* plan);

// What the rank with the most to move sends and receives: the same figure on every rank, so
// that all take the same path (a reduce-scatter's blocks differ from rank to rank, and ranks
// that split on its own bytes ran one through pinned host copies and one through IPC direct,
// each waiting for the other).
size_t most_bytes_of_a_rank(CollKind kind, const RingArgs& ring);

AlgoInputs algo_inputs(CollKind kind, const RingArgs& ring, int hier_per_node,
                       const EngineConfig& config);

}  // namespace efacoll

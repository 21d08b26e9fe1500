// The CUDA IPC paths inside one node written as data, as the fabric's schedules are: which rank
// copies or reduces which bytes of whose buffer, in phases that every rank ends together (a host
// barrier). The engine executes these (engine/paths/ipc_rounds.cc, ipc_direct.cc), and the same
// structural checks as the schedules' run on them for every rank at once
// (tests/unit/node_schedule_test.cc: no two ranks touch the same bytes in one phase with one of
// them writing; every workspace byte written is read before it is overwritten; nothing is read
// that was never written; every result holds each contribution exactly once).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "efacoll/types.h"

namespace efacoll {

// Where bytes lie: a rank's input (its receive buffer in place) or receive buffer, or the input
// or output half of its IPC workspace.
enum class NodeSpace : uint8_t { kSend, kRecv, kWsIn, kWsOut };

struct NodeRef {
  int rank = 0;
  NodeSpace space = NodeSpace::kSend;
  size_t offset = 0;  // bytes
};

struct NodeOp {
  enum class Kind : uint8_t { kCopy, kReduce };
  Kind kind = Kind::kCopy;
  NodeRef dst;
  // kCopy: one. kReduce: dst = srcs[0] op srcs[1] op ... in this order (dst may alias srcs[0]).
  std::vector<NodeRef> srcs;
  size_t bytes = 0;
};

struct NodePhase {
  std::vector<NodeOp> ops;    // this rank's, in order
  bool barrier_after = true;  // every rank meets before the next phase
};

struct NodeCall {
  CollKind kind = CollKind::kAllreduce;
  int rank = 0, nranks = 1;
  size_t elem_size = 1;
  // allreduce: the vector; allgather: each rank's block; reduce-scatter: unused (blocks).
  size_t count = 0;
  std::vector<size_t> blocks;  // reduce-scatter: elements each rank receives
  bool inplace = false;
  size_t half = 0;  // bytes of each workspace half (IPC rounds)
};

// IPC rounds: the data goes through the members' workspaces, `half` bytes a round.
std::vector<NodePhase> ipc_rounds_schedule(const NodeCall& call);
// IPC direct: the peers' own buffers, one phase (not for in-place reduce-scatter).
std::vector<NodePhase> ipc_direct_schedule(const NodeCall& call);

// Whether any operation of `phases` reads or writes `rank`'s `space` (what must be mapped).
bool node_schedule_touches(const std::vector<NodePhase>& phases, int rank, NodeSpace space);

}  // namespace efacoll

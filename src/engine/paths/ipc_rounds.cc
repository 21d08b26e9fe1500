// Inside one node: GPU data moves peer to peer through CUDA IPC (NVLink, or PCIe peer access),
// never through the fabric or the host. Each rank exports one device workspace per communicator
// (input half, output half) and maps its peers' once, so user buffers are never mapped. A
// collective runs in rounds of at most half a workspace:
//   copy my part in -> barrier -> each rank reduces (or gathers) its slice, reading peers'
//   inputs over NVLink -> barrier -> each rank gathers the peers' results.
// The barrier after the reduction also guards the inputs, and the next call's first barrier
// guards the outputs, so two barriers a round suffice. Barriers are tiny allgathers through the
// transport.
#include <vector>

#include "coll/node_schedule.h"
#include "engine/node_ops.h"
#include "engine/paths/ipc_paths.h"
#include "gpu/gpu_runtime.h"

namespace efacoll {

// Every rank passes every barrier even after a local failure (it skips its work instead): a
// rank that left early would leave its peers waiting and the next call out of step.
Status IpcPaths::run_rounds(const CollArgs& args, const RingArgs& ring) {
  IpcState& s = state_;
  GpuRuntime* gpu = s.gpu;
  const uint8_t* send = static_cast<const uint8_t*>(args.sendbuf);  // out of place only
  auto* recv = static_cast<uint8_t*>(args.recvbuf);
  uint8_t token = 0;
  std::vector<uint8_t> tokens(size_);
  Status err;
  bool first = true;
  // Each barrier also says whether every rank is still well: a peer's failure spoils our result.
  // The first carries the calls too: ranks that called with another type, op or count would
  // run other numbers of barriers, and pair theirs with the peers' next call. All see the same
  // keys, so all stop there together.
  auto barrier = [&]() -> Status {
    token = err.is_ok();
    if (first) {
      first = false;
      IpcCallKey mine = ipc_call_key(args, ring);
      mine.well = token;
      std::vector<IpcCallKey> keys(size_);
      EFACOLL_RETURN_IF_ERROR(services_.allgather(&mine, sizeof(mine), keys.data()));
      EFACOLL_RETURN_IF_ERROR(compare_keys(args, mine, keys));
      for (int p = 0; p < size_; ++p) tokens[p] = static_cast<uint8_t>(keys[p].well);
    } else {
      EFACOLL_RETURN_IF_ERROR(services_.allgather(&token, 1, tokens.data()));
    }
    for (int p = 0; p < size_ && err.is_ok(); ++p) {
      if (!tokens[p])
        err = Status(Code::kInternal, "rank " + std::to_string(p) + " failed its part");
    }
    return Status::ok();
  };
  NodeCall call = node_call(args, ring);
  call.half = s.half;
  // Rounds touch only this rank's own buffers, and every member's workspace.
  const NodeAddress address = [&](const NodeRef& r) -> uint8_t* {
    uint8_t* base = r.space == NodeSpace::kWsIn    ? s.input(r.rank)
                    : r.space == NodeSpace::kWsOut ? s.output(r.rank)
                    : r.rank != rank_              ? nullptr
                    : r.space == NodeSpace::kSend  ? const_cast<uint8_t*>(send)
                                                   : recv;
    return base ? base + r.offset : nullptr;
  };
  for (const NodePhase& phase : ipc_rounds_schedule(call)) {
    if (err.is_ok()) {
      Status st = run_node_ops(gpu, phase.ops, address, args.dtype, args.op);
      if (!st.is_ok()) err = st;
    }
    if (phase.barrier_after) EFACOLL_RETURN_IF_ERROR(barrier());
  }
  return err;
}

}  // namespace efacoll

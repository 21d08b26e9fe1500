// Inside one node, on the caller's own buffers: each rank maps its peers' send and receive
// buffers (once per allocation, by CUDA buffer id), reduces its slice reading every peer's send
// buffer over NVLink and writes the result into every peer's receive buffer. One exchange of
// handles (which is also the "all here" barrier) and one closing barrier per call; no staging
// copy. In-place reduce-scatter is left to the round-based path: its result would overwrite input
// a peer may still be reading. So are buffers that cannot be exported (managed memory, pools).
#include <algorithm>
#include <cstring>

#include "coll/node_schedule.h"
#include "engine/node_ops.h"
#include "engine/paths/ipc_paths.h"
#include "gpu/gpu_runtime.h"
#include "gpu/memory_kind.h"

namespace efacoll {
namespace {

Status describe(GpuRuntime* gpu, const void* ptr, uint64_t buffer_id, IpcBufferRef* out) {
  std::memset(out, 0, sizeof(*out));
  void* base = nullptr;
  EFACOLL_RETURN_IF_ERROR(driver_allocation_base(ptr, &base));
  out->offset = static_cast<const uint8_t*>(ptr) - static_cast<uint8_t*>(base);
  out->buffer_id = buffer_id;
  return gpu->ipc_export(base, out->handle);
}

// Peer p's buffer as seen from here, mapped until the call ends (the engine's IpcMappings).
Status map_peer(IpcState& s, IpcMappings::Call* call, int peer, const IpcBufferRef& ref,
                uint8_t** out) {
  void* base = nullptr;
  EFACOLL_RETURN_IF_ERROR(
      s.mappings->map(call, s.processes[peer], ref.buffer_id, ref.handle, &base));
  *out = static_cast<uint8_t*>(base) + ref.offset;
  return Status::ok();
}

}  // namespace

bool IpcPaths::direct_possible(const CollArgs& args) const {
  return services_.config->ipc_direct && !(args.kind == CollKind::kReduceScatter && args.inplace);
}

Status IpcPaths::run_direct(const CollArgs& args, const RingArgs& ring) {
  IpcState& s = state_;
  GpuRuntime* gpu = s.gpu;
  const size_t esize = dtype_size(args.dtype);
  auto* recv = static_cast<uint8_t*>(args.recvbuf);
  const uint8_t* send = static_cast<const uint8_t*>(args.inplace ? args.recvbuf : args.sendbuf);
  if (args.kind == CollKind::kAllgather && args.inplace) send = recv + rank_ * args.count * esize;

  // Peers read our send buffer directly: it must be final (work queued on the legacy default
  // stream included) before they are told where it is. Every rank joins the exchange even when
  // its own part failed (managed or pool memory cannot be exported): then all take the rounds.
  IpcDirectBlob mine = {};
  mine.key = ipc_call_key(args, ring);
  Status st = gpu->synchronize();
  const uint64_t send_id = args.inplace ? args.recv_buffer_id : args.send_buffer_id;
  if (st.is_ok()) st = describe(gpu, send, send_id, &mine.send);
  if (st.is_ok()) st = describe(gpu, recv, args.recv_buffer_id, &mine.recv);
  mine.ok = st.is_ok();
  std::vector<IpcDirectBlob> all(size_);
  EFACOLL_RETURN_IF_ERROR(services_.allgather(&mine, sizeof(mine), all.data()));
  // Every rank sees every key: all stop here together, before touching a peer's memory.
  std::vector<IpcCallKey> keys(size_);
  for (int p = 0; p < size_; ++p) keys[p] = all[p].key;
  EFACOLL_RETURN_IF_ERROR(compare_keys(args, mine.key, keys));
  for (const IpcDirectBlob& b : all) {
    if (!b.ok) return run_rounds(args, ring);
  }
  std::vector<uint8_t*> sends(size_), recvs(size_);
  sends[rank_] = const_cast<uint8_t*>(send);
  recvs[rank_] = recv;
  // Mapped only while this call holds the engine's lock (it maps, works and lets go before its
  // closing barrier lends the lock): no other thread's call holds a mapping in the way. A peer's
  // buffers that share a driver chunk map once per process; such a mapping that another call
  // kept cached, idle, makes way (IpcMappings).
  IpcMappings::Call mapped;
  const std::vector<NodePhase> phases = ipc_direct_schedule(node_call(args, ring));
  for (int p = 0; p < size_ && st.is_ok(); ++p) {
    if (p == rank_) continue;
    // Only what the schedule touches of the peer's buffers.
    if (node_schedule_touches(phases, p, NodeSpace::kSend))
      st = map_peer(s, &mapped, p, all[p].send, &sends[p]);
    if (st.is_ok() && node_schedule_touches(phases, p, NodeSpace::kRecv))
      st = map_peer(s, &mapped, p, all[p].recv, &recvs[p]);
  }
  if (st.is_ok()) {
    const NodeAddress address = [&](const NodeRef& r) -> uint8_t* {
      uint8_t* base = r.space == NodeSpace::kSend   ? sends[r.rank]
                      : r.space == NodeSpace::kRecv ? recvs[r.rank]
                                                    : nullptr;
      return base ? base + r.offset : nullptr;
    };
    for (const NodePhase& phase : phases) {
      if (st.is_ok()) st = run_node_ops(gpu, phase.ops, address, args.dtype, args.op);
    }
  }
  // Our reads and writes of the peers' buffers are done (the copies and reductions are
  // synchronous). Nobody leaves (and lets the caller reuse its buffers) while a peer still reads
  // or writes them.
  s.mappings->end_call(&mapped);
  uint8_t token = st.is_ok();
  std::vector<uint8_t> tokens(size_);
  Status done = services_.allgather(&token, 1, tokens.data());
  if (!st.is_ok()) return st;
  EFACOLL_RETURN_IF_ERROR(done);
  // Peers write parts of our result: one that failed leaves it incomplete.
  for (int p = 0; p < size_; ++p) {
    if (!tokens[p])
      return Status(Code::kInternal, "rank " + std::to_string(p) + " failed its part");
  }
  return Status::ok();
}

}  // namespace efacoll

// Inside one node: GPU data moves peer to peer through CUDA IPC (NVLink, or PCIe peer access),
// never through the fabric or the host. Each rank exports one device workspace per communicator
// (input half, output half) and maps its peers' once, so user buffers are never mapped. A
// collective runs in rounds of at most half a workspace:
//   copy my part in -> barrier -> each rank reduces (or gathers) its slice, reading peers'
//   inputs over NVLink -> barrier -> each rank gathers the peers' results.
// The barrier after the reduction also guards the inputs, and the next call's first barrier
// guards the outputs, so two barriers a round suffice. Barriers are tiny allgathers through the
// transport.
#include <algorithm>
#include <cstring>

#include "coll/node_schedule.h"
#include "coll/registry.h"
#include "coll/ring_layout.h"
#include "common/log.h"
#include "core/call_signature.h"
#include "engine/comm_core.h"
#include "engine/engine_core.h"
#include "engine/ipc_state.h"
#include "engine/node_ops.h"
#include "gpu/gpu_runtime.h"
#include "transport/transport.h"

namespace efacoll {

Status CommCore::host_allgather(const void* in, size_t bytes, void* out, size_t chunk_bytes) {
  CollArgs a;
  a.kind = CollKind::kAllgather;
  a.sendbuf = in;
  a.recvbuf = out;
  a.count = bytes;
  a.dtype = DType::kByte;
  RingArgs ring;
  ring.rank = rank_;
  ring.nranks = size_;
  ring.elem_size = 1;
  ring.block_counts.assign(size_, bytes);
  ring.chunk_bytes = chunk_bytes ? chunk_bytes : engine_->config().chunk_bytes;
  Schedule schedule;
  EFACOLL_RETURN_IF_ERROR(build_call_schedule(
      *find_schedule_builder(Algo::kRing, CollKind::kAllgather), ring, 0, 1, &schedule));
  return run_schedule(a, schedule, bytes, bytes * size_, ring.chunk_bytes);
}

// Collective: every member must call it at the same point (the first GPU call that could use
// IPC). Everyone learns the same answer, so either all use IPC or none does.
bool CommCore::ipc_usable(int device) {
  if (ipc_) return ipc_->usable && ipc_->device == device;
  ipc_ = std::make_unique<IpcState>();
  IpcState& s = *ipc_;
  s.gpu = engine_->gpu();
  s.mappings = engine_->ipc_mappings();
  s.device = device;
  s.half = engine_->config().ipc_chunk_bytes;
  const size_t ll_slot = ll_slot_bytes(engine_->config().ipc_ll_max_bytes, size_);
  const bool ll_wanted = ll_slot > 0;
  s.ll_region.slot_bytes = ll_wanted ? ll_slot : 0;
  s.ll_region.nranks = ll_wanted ? size_ : 0;
  s.ll_seq = engine_->config().ipc_ll_seq_start;
  struct Blob {
    uint8_t handle[GpuRuntime::kIpcHandleBytes];
    char uuid[16];
    uint64_t process;
    int32_t device;
    int32_t ok;
  };
  Blob mine = {};
  const size_t ll_bytes = ll_wanted ? s.ll_region.total_bytes() : 0;
  Status st = s.gpu->alloc_device(device, 2 * s.half + ll_bytes, &s.workspace);
  if (st.is_ok()) s.workspace_bytes = 2 * s.half + ll_bytes;
  // Peers write flags into the region from their first call on: it starts at zero.
  if (st.is_ok() && ll_bytes)
    st = s.gpu->zero(static_cast<uint8_t*>(s.workspace) + 2 * s.half, ll_bytes);
  if (st.is_ok()) st = s.gpu->ipc_export(s.workspace, mine.handle);
  std::string uuid;
  if (st.is_ok()) st = s.gpu->device_uuid(device, &uuid);
  std::memcpy(mine.uuid, uuid.data(), std::min(uuid.size(), sizeof(mine.uuid)));
  mine.device = device;
  mine.process = engine_->process_key();
  mine.ok = st.is_ok();
  std::vector<Blob> all(size_);
  if (!host_allgather(&mine, sizeof(mine), all.data()).is_ok()) return false;
  // Map every peer's workspace; then agree, since a mapping can fail on one rank only.
  s.peers.assign(size_, nullptr);
  s.processes.resize(size_);
  for (int p = 0; p < size_; ++p) s.processes[p] = all[p].process;
  int32_t ok = 1;
  for (int p = 0; p < size_; ++p) {
    ok = ok && all[p].ok && s.gpu->can_access_peer(device, all[p].device);
  }
  for (int p = 0; ok && p < size_; ++p) {
    if (p == rank_) {
      s.peers[p] = s.workspace;
    } else if (!s.mappings->open_kept(all[p].process, all[p].handle, &s.peers[p]).is_ok()) {
      ok = 0;
    }
  }
  std::vector<int32_t> oks(size_);
  if (!host_allgather(&ok, sizeof(ok), oks.data()).is_ok()) return false;
  s.usable = std::all_of(oks.begin(), oks.end(), [](int32_t v) { return v != 0; });
  const bool own_gpus = !any_gpu_shared(all);
  s.ll_usable = s.usable && ll_wanted && own_gpus;
  s.gpu_shared = !own_gpus;
  EFACOLL_INFO(kNet, "communicator %u: CUDA IPC between its %d GPUs %s; low-latency protocol %s",
               id_, size_, s.usable ? "in use" : "not possible: data goes through the fabric",
               s.ll_usable ? "up to the per-rank size EFACOLL_IPC_LL_MAX"
               : !own_gpus ? "off (ranks share a GPU)"
                           : "off");
  return s.usable;
}

IpcCallKey ipc_call_key(const CollArgs& args, const RingArgs& ring) {
  IpcCallKey key;
  for (size_t c : ring.block_counts) key.count += c;
  key.signature = given_signature(args.abandoned, args.kind, args.dtype, args.op, key.count);
  return key;
}

// kMismatch where a rank's key differs from this rank's; `keys` by rank.
Status CommCore::compare_ipc_keys(const CollArgs& args, const IpcCallKey& mine,
                                  const std::vector<IpcCallKey>& keys) const {
  for (int p = 0; p < size_; ++p) {
    std::string why = describe_mismatch(mine.signature, keys[p].signature, p);
    if (why.empty() && keys[p].count != mine.count) {
      why = "rank " + std::to_string(p) + " called with " + std::to_string(keys[p].count) +
            " elements, this rank with " + std::to_string(mine.count);
    }
    if (!why.empty()) {
      return Status(Code::kMismatch, std::string(coll_name(args.kind)) + " on communicator " +
                                         std::to_string(id_) + " (CUDA IPC): " + why +
                                         " (every rank must make the same call)");
    }
  }
  return Status::ok();
}

// Every rank passes every barrier even after a local failure (it skips its work instead): a
// rank that left early would leave its peers waiting and the next call out of step.
Status CommCore::run_ipc(const CollArgs& args, const RingArgs& ring) {
  IpcState& s = *ipc_;
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
      EFACOLL_RETURN_IF_ERROR(host_allgather(&mine, sizeof(mine), keys.data()));
      EFACOLL_RETURN_IF_ERROR(compare_ipc_keys(args, mine, keys));
      for (int p = 0; p < size_; ++p) tokens[p] = static_cast<uint8_t>(keys[p].well);
    } else {
      EFACOLL_RETURN_IF_ERROR(host_allgather(&token, 1, tokens.data()));
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

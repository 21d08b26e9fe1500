// The IPC paths' set-up, the call keys they compare, and their memory at the end.
#include "engine/paths/ipc_paths.h"

#include <algorithm>
#include <cstring>

#include "coll/ring_layout.h"
#include "common/log.h"
#include "core/call_signature.h"
#include "engine/gpu_memory_to_free.h"
#include "engine/paths/ipc_state.h"

namespace efacoll {

IpcPaths::IpcPaths(IpcPathServices services)
    : services_(std::move(services)), rank_(services_.rank), size_(services_.size) {
  state_.gpu = services_.gpu;
  state_.mappings = services_.mappings;
}

// Every member calls it at the same point: either all use IPC or none does.
void IpcPaths::set_up(int device) {
  IpcState& s = state_;
  s.device = device;
  s.half = services_.config->ipc_chunk_bytes;
  const size_t ll_slot = ll_slot_bytes(services_.config->ipc_ll_max_bytes, size_);
  const bool ll_wanted = ll_slot > 0;
  s.ll_region.slot_bytes = ll_wanted ? ll_slot : 0;
  s.ll_region.nranks = ll_wanted ? size_ : 0;
  s.ll_seq = services_.config->ipc_ll_seq_start;
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
  mine.process = services_.process_key;
  mine.ok = st.is_ok();
  std::vector<Blob> all(size_);
  if (!services_.allgather(&mine, sizeof(mine), all.data()).is_ok()) return;
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
  if (!services_.allgather(&ok, sizeof(ok), oks.data()).is_ok()) return;
  s.usable = std::all_of(oks.begin(), oks.end(), [](int32_t v) { return v != 0; });
  const bool own_gpus = !any_gpu_shared(all);
  s.ll_usable = s.usable && ll_wanted && own_gpus;
  s.gpu_shared = !own_gpus;
  EFACOLL_INFO(kNet, "communicator %u: CUDA IPC between its %d GPUs %s; low-latency protocol %s",
               services_.comm_id, size_,
               s.usable ? "in use" : "not possible: data goes through the fabric",
               s.ll_usable ? "up to the per-rank size EFACOLL_IPC_LL_MAX"
               : !own_gpus ? "off (ranks share a GPU)"
                           : "off");
}

IpcCallKey ipc_call_key(const CollArgs& args, const RingArgs& ring) {
  IpcCallKey key;
  for (size_t c : ring.block_counts) key.count += c;
  key.signature = given_signature(args.abandoned, args.kind, args.dtype, args.op, key.count);
  return key;
}

Status IpcPaths::compare_keys(const CollArgs& args, const IpcCallKey& mine,
                              const std::vector<IpcCallKey>& keys) const {
  for (int p = 0; p < size_; ++p) {
    std::string why = describe_mismatch(mine.signature, keys[p].signature, p);
    if (why.empty() && keys[p].count != mine.count) {
      why = "rank " + std::to_string(p) + " called with " + std::to_string(keys[p].count) +
            " elements, this rank with " + std::to_string(mine.count);
    }
    if (!why.empty()) {
      return Status(Code::kMismatch, std::string(coll_name(args.kind)) + " on communicator " +
                                         std::to_string(services_.comm_id) + " (CUDA IPC): " + why +
                                         " (every rank must make the same call)");
    }
  }
  return Status::ok();
}

void IpcPaths::give_memory(GpuMemoryToFree* out) {
  // Its own entry in peers is the workspace, not a mapping.
  for (void*& p : state_.peers) {
    if (p && p != state_.workspace) out->add_ipc_mapping(p);
    p = nullptr;
  }
  if (state_.workspace) out->add_device(state_.device, state_.workspace, state_.workspace_bytes);
  state_.workspace = nullptr;
}

}  // namespace efacoll

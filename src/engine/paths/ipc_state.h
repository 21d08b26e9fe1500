// The CUDA IPC paths' state (IpcPaths owns it): this rank's device workspace and its peers' as
// mapped here, the low-latency region and sequence; and what the paths exchange between ranks.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "engine/ipc_mappings.h"
#include "gpu/gpu_runtime.h"
#include "gpu/ll_protocol.h"

namespace efacoll {

// Whether two of the gathered blobs (each with a 16-byte GPU `uuid`) name the same GPU.
template <typename Blob>
bool any_gpu_shared(const std::vector<Blob>& all) {
  for (size_t p = 0; p < all.size(); ++p) {
    for (size_t q = 0; q < p; ++q) {
      if (std::memcmp(all[p].uuid, all[q].uuid, sizeof(all[p].uuid)) == 0) return true;
    }
  }
  return false;
}

// What a rank was asked to do, compared across ranks before any touches another's memory: a rank
// with another count would read or write past a peer's buffer, or run other numbers of barriers.
struct IpcCallKey {
  uint64_t count = 0;  // the whole vector's elements
  uint32_t signature = 0;
  uint32_t well = 0;  // run_ipc's first barrier: this rank's part so far went well
};

// A user buffer as IPC direct's exchange names it to the peers.
struct IpcBufferRef {
  uint8_t handle[GpuRuntime::kIpcHandleBytes];
  uint64_t offset;
  uint64_t buffer_id;
};

// What each rank gives in IPC direct's first exchange.
struct IpcDirectBlob {
  IpcBufferRef send, recv;
  IpcCallKey key;
  int32_t ok;  // its buffers could be exported
};

// What a peer's low-latency key says differs from this rank's call (signature and whole count),
// for the error both sides of a mismatch report.
std::string describe_ll_mismatch(uint32_t signature, uint64_t count, uint32_t their_key, int peer);

struct CollArgs;
struct RingArgs;
IpcCallKey ipc_call_key(const CollArgs& args, const RingArgs& ring);

struct IpcState {
  bool usable = false;
  int device = -1;
  void* workspace = nullptr;  // [input half | output half | low-latency region]
  size_t workspace_bytes = 0;
  size_t half = 0;
  // Low-latency protocol: usable when every member has a GPU of its own (kernels of processes
  // sharing a GPU do not run at once, so one waiting on another's flags would stall).
  bool ll_usable = false;
  // Two members on one GPU: IPC and the fabric are then timed (CommCore::measure_shared_gpu).
  bool gpu_shared = false;
  LlRegion ll_region;
  uint64_t ll_seq = 0;
  std::vector<void*> peers;         // each rank's workspace as mapped here (own: workspace)
  std::vector<uint64_t> processes;  // each rank's engine, as the engine's IPC mappings name it
  GpuRuntime* gpu = nullptr;
  IpcMappings* mappings = nullptr;  // the engine's: peers' user buffers

  // IpcPaths::give_memory hands both to the engine's deferred frees first: nothing is left here
  // but where a communicator never got that far.
  ~IpcState() {
    for (size_t p = 0; p < peers.size(); ++p) {
      if (peers[p] && peers[p] != workspace) gpu->ipc_close(peers[p]);
    }
    if (workspace) gpu->free_device(device, workspace);
  }
  uint8_t* input(int rank) const { return static_cast<uint8_t*>(peers[rank]); }
  uint8_t* output(int rank) const { return static_cast<uint8_t*>(peers[rank]) + half; }
  uint8_t* ll(int rank) const { return static_cast<uint8_t*>(peers[rank]) + 2 * half; }
};

}  // namespace efacoll

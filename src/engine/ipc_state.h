// A communicator's CUDA IPC state: its own device workspace and its peers' as mapped here.
#pragma once
#include <cstdint>
#include <list>
#include <map>
#include <utility>
#include <vector>

#include "gpu/gpu_runtime.h"

namespace efacoll {

struct IpcState {
  bool usable = false;
  int device = -1;
  void* workspace = nullptr;  // [input half | output half]
  size_t half = 0;
  std::vector<void*> peers;  // each rank's workspace as mapped here (own: workspace)
  GpuRuntime* gpu = nullptr;
  // Peers' user buffers mapped here, by (peer, CUDA buffer id): never mapped twice.
  std::map<std::pair<int, uint64_t>, void*> mapped;
  std::list<std::pair<int, uint64_t>> mapped_order;  // most recent first
  std::vector<void*> call_mappings;                  // buffers without an id: this call only

  ~IpcState() {
    for (auto& kv : mapped) gpu->ipc_close(kv.second);
    for (void* m : call_mappings) gpu->ipc_close(m);
    for (size_t p = 0; p < peers.size(); ++p) {
      if (peers[p] && peers[p] != workspace) gpu->ipc_close(peers[p]);
    }
    if (workspace) gpu->free_device(device, workspace);
  }
  uint8_t* input(int rank) const { return static_cast<uint8_t*>(peers[rank]); }
  uint8_t* output(int rank) const { return static_cast<uint8_t*>(peers[rank]) + half; }
};

}  // namespace efacoll

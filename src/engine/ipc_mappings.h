// Peers' user buffers mapped into this process through CUDA IPC, for every communicator of the
// engine. The driver maps a peer's memory once per process: a mapping that one communicator kept
// of memory the peer has since freed (its VA then reused by a new allocation, another
// communicator's scratch or a new user buffer) makes the next open of that memory fail with
// "already mapped", whichever communicator asks. So the cache is keyed by the peer's process,
// not by a communicator's rank, and making way closes that process's idle mappings everywhere.
// Used under the engine's lock; under MPI_THREAD_MULTIPLE several GPU calls may be under way at
// once (each lends the lock while it waits for peers), so "idle" means used by none of them.
// `close` may defer the close (the engine's waits for its low-latency kernels, since
// cudaIpcCloseMemHandle waits for this process's kernels: gpu_memory_to_free.h); `make_way`
// closes what was deferred at once, before a chunk is mapped again, and so may wait for them
// (the call would otherwise fail "already mapped", its peers having begun to map ours).
#pragma once
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <utility>
#include <vector>

#include "efacoll/status.h"

namespace efacoll {

class IpcMappings {
 public:
  using Key = std::pair<uint64_t, uint64_t>;  // (process, buffer id)
  // What one call relies on until end_call(): cached mappings it uses, and its own uncached ones.
  struct Call {
    std::vector<Key> used;
    std::vector<void*> own;
  };
  // open: kAgain where the memory is mapped here already (GpuRuntime::ipc_open).
  using Open = std::function<Status(const void* handle, void** out)>;
  using Close = std::function<void(void* mapped)>;
  IpcMappings(Open open, Close close, size_t kept, std::function<void()> make_way = nullptr);
  ~IpcMappings();  // closes every cached mapping (a call's own ones close at its end_call)
  IpcMappings(const IpcMappings&) = delete;
  IpcMappings& operator=(const IpcMappings&) = delete;

  // Peer `process`'s buffer behind `handle`, in use by `call` until end_call(): cached by
  // `buffer_id` (its CUDA buffer id; 0: none, mapped for this call alone).
  Status map(Call* call, uint64_t process, uint64_t buffer_id, const void* handle, void** base);
  // A mapping its caller keeps and closes (a communicator's workspace), opened as map() opens.
  Status open_kept(uint64_t process, const void* handle, void** base);
  // Closes the call's uncached mappings and the least recently used cached ones past `kept`
  // that no call uses.
  void end_call(Call* call);
  size_t cached() const { return cached_.size(); }

 private:
  struct Cached {
    void* base;
    int users;  // calls under way that use it
  };
  // Opens; where an older mapping is in the way, closes the process's cached mappings that no
  // call uses, and tries once more.
  Status open(uint64_t process, const void* handle, void** base);
  void close_idle(uint64_t process);
  void forget(std::map<Key, Cached>::iterator it);

  Open open_;
  Close close_;
  size_t kept_;
  std::function<void()> make_way_;
  std::map<Key, Cached> cached_;
  std::list<Key> recent_;  // most recent first
};

}  // namespace efacoll

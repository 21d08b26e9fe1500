// The GPU paths inside one node over CUDA IPC: rounds through exported workspaces
// (ipc_rounds.cc), the caller's own buffers mapped (ipc_direct.cc), and the low-latency kernel
// (ipc_low_latency.cc), with the watch that stops ranks whose calls took different ones
// (ipc_path_watch.cc). What each moves is a node schedule (coll/node_schedule.h); which runs is
// the plan's (tune/plan.h).
//
// Owns its state (paths/ipc_state.h) and uses only the services below: no engine, no
// communicator. Lifecycle: set_up once (collective), then any run_* per call on every rank alike
// (the plan is the same on every rank), give_memory at the communicator's end.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "efacoll/engine.h"
#include "efacoll/status.h"
#include "engine/paths/ipc_state.h"

namespace efacoll {

struct RingArgs;
struct GpuMemoryToFree;
enum class LlPath : uint32_t;

// What the IPC paths need of the engine and the communicator.
struct IpcPathServices {
  GpuRuntime* gpu = nullptr;
  IpcMappings* mappings = nullptr;  // the engine's: peers' user buffers, mapped once per process
  const EngineConfig* config = nullptr;
  uint64_t process_key = 0;  // this process's engine, as the peers' mappings name it
  int rank = 0, size = 1;
  uint32_t comm_id = 0;  // for messages
  // Every member's `bytes` from `in` into `out` in rank order, through the fabric: the paths'
  // exchanges and barriers.
  std::function<Status(const void* in, size_t bytes, void* out)> allgather;
  // The lock a call may lend while its kernel waits for peers (null: none to lend).
  std::function<std::unique_lock<std::mutex>*()> lendable_lock;
  // Around each low-latency kernel: the engine defers frees of GPU memory meanwhile, since a
  // free would wait for the kernel, and so for its peers.
  std::function<void()> kernel_started, kernel_ended;
};

class IpcPaths {
 public:
  explicit IpcPaths(IpcPathServices services);
  IpcPaths(const IpcPaths&) = delete;
  IpcPaths& operator=(const IpcPaths&) = delete;

  // Collective, at the first GPU call that could use IPC: exports this rank's workspace, maps
  // the peers', and agrees. Every rank learns the same answer.
  void set_up(int device);
  bool usable_on(int device) const { return state_.usable && state_.device == device; }
  bool low_latency_set_up() const { return state_.ll_usable; }
  // Nodes declared on one machine share its GPUs: kernels of processes on one GPU take turns, so
  // one spinning on another's flags would stall. The same on every rank.
  void turn_off_low_latency() { state_.ll_usable = false; }
  bool gpus_shared() const { return state_.gpu_shared; }

  // Whether the low-latency kernel takes the call (and its plan); the same answer on every rank.
  bool low_latency_plan(const CollArgs& args, LlCall* call) const;
  // Whether IPC direct may take the call (else the rounds).
  bool direct_possible(const CollArgs& args) const;
  // Every GPU call inside the node takes the next low-latency sequence, whichever path it runs.
  Status advance_sequence();

  Status run_low_latency(const CollArgs& args, LlCall& call);  // at advance_sequence's sequence
  Status run_rounds(const CollArgs& args, const RingArgs& ring);
  Status run_direct(const CollArgs& args, const RingArgs& ring);

  // For a call off the low-latency protocol (on `path`) whose first exchange waits: a check
  // that stores its key in the peers' regions and stops on a peer in the protocol (for
  // ExecContext::on_stall).
  std::function<Status()> watch_peers(CollKind kind, LlPath path, const IpcCallKey& call);

  // The workspace and the peers' mappings, handed over at the communicator's end.
  void give_memory(GpuMemoryToFree* out);

 private:
  // kMismatch where a rank's key (by rank) differs from this rank's.
  Status compare_keys(const CollArgs& args, const IpcCallKey& mine,
                      const std::vector<IpcCallKey>& keys) const;
  Status read_ll_keys(std::vector<uint64_t>* words);  // this rank's region, this sequence
  // A rank in the protocol that found a peer off it joins that peer's first exchange.
  Status join_peers_exchange(const IpcCallKey& call);

  IpcPathServices services_;
  const int rank_, size_;  // services_'s
  IpcState state_;
};

}  // namespace efacoll

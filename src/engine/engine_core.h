// The engine's implementation: what every communicator of one process shares (transport, GPU
// runtime, MR cache, staging pool, IPC mappings, late sends, retired memory, the idle progress
// thread and the provider watchdog), and the services a communicator's calls use. Behind the
// public Engine (include/efacoll/engine.h).
#pragma once
#include <atomic>
#include <bitset>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "efacoll/engine.h"

namespace efacoll {

class MrCache;
class LateSends;
class IpcMappings;
class StagePool;
struct GpuMemoryToFree;

// Memory a failed call's receives named, which their senders may still write: freed once every
// such write has come, or kept with the transport where the provider stays open.
struct RetiredMemory {
  std::vector<std::vector<uint8_t>> host;
  std::unique_ptr<GpuMemoryToFree> gpu;  // null without a GPU runtime
  size_t bytes_held = 0, bytes_total = 0;
};

class EngineCore {
 public:
  // gpu may be null: GPU buffers are then kUnsupported (the shim stages them to MPI).
  EngineCore(std::unique_ptr<Transport> transport, const EngineConfig& config,
             std::unique_ptr<GpuRuntime> gpu);
  ~EngineCore();
  EngineCore(const EngineCore&) = delete;
  EngineCore& operator=(const EngineCore&) = delete;

  // Collective over the bootstrap's members: exchanges addresses, agrees on a communicator id.
  // inherit: a sub-communicator made inside a collective (whose lock is held) takes its
  // parent's cost model instead of calibrating.
  // ids_over: the members that agree on its id (null: bootstrap's). A hierarchical call's
  // sub-communicators agree over the whole parent, so that every rank of the parent runs the
  // same rounds through the parent's allgather, whichever subset it is in.
  Status create_comm(Bootstrap& bootstrap, std::unique_ptr<CommCore>* out,
                     const CostModel* inherit = nullptr, Bootstrap* ids_over = nullptr);
  const TransportInfo& transport_info() const;
  Status set_algo(const std::string& spec);
  // Under busy_: from the next call on (calibration measures each algorithm so).
  void force_algorithms(const AlgoOverrides& algo) { config_.algo = algo; }
  const char* last_algorithm() const;
  TunedChoice last_choice() const;
  ResourceUsage resource_usage();

  // What a communicator's calls use (src/engine/comm*.cc).
  const EngineConfig& config() const { return config_; }
  Transport* transport() const { return transport_.get(); }
  GpuRuntime* gpu() const { return gpu_.get(); }
  MrCache* mr_cache() const { return mr_cache_.get(); }  // null: the provider wants none
  StagePool* stages() const { return stages_.get(); }    // null without a GPU runtime
  LateSends* late_sends() const { return late_sends_.get(); }
  IpcMappings* ipc_mappings() const { return ipc_mappings_.get(); }  // null without a GPU runtime
  uint64_t process_key() const { return process_key_; }
  // Held by a running collective (released while a host call waits, when config.concurrent);
  // the idle progress thread only try_locks it.
  std::mutex& busy() { return busy_; }
  // A new identity for an engine-owned buffer in the MR cache.
  uint64_t new_allocation_id() { return next_allocation_id_++; }
  // CUDA buffer ids of GPU allocations the provider refused to register: staged (comm_execute).
  std::unordered_set<uint64_t>* unregistrable_gpu_buffers() { return &unregistrable_gpu_buffers_; }
  // A communicator's end (under busy_, or its parent's call): its id free again.
  void comm_freed(uint32_t id, bool nested);
  // What the last call chose, both at once under last_mutex_: a reader never pairs one call's
  // choice with another's algorithm. `algorithm`: a string literal.
  void record_call(const TunedChoice& choice, const char* algorithm);
  // Under busy_: `memory` is freed now, or once no low-latency kernel of this engine is under way
  // (engine/gpu_memory_to_free.h).
  void give_back_gpu_memory(GpuMemoryToFree memory);
  // Frees what was retired once the transport awaits no late write and holds no operation, and
  // no hierarchical call is under way (comm_late_writes.cc).
  void release_retired_memory();
  // Memory a failed call's receives named, which their senders may still write.
  RetiredMemory& retired() { return *retired_; }
  // Under busy_: a low-latency kernel may run meanwhile (GPU memory given back waits); its end
  // frees what waited.
  void ll_kernel_started() { ++ll_kernels_under_way_; }
  void ll_kernel_ended();
  // Under busy_. A phase that fails retires the slices it received into, and the call's later
  // phases, abandoned, still run in them: retired memory stays until such calls end.
  void hierarchical_call_started() { ++hierarchical_calls_under_way_; }
  void hierarchical_call_ended() { --hierarchical_calls_under_way_; }
  // provider_watchdog.cc
  void note_call_started(CollKind kind, uint32_t comm_id, uint32_t seq);

 private:
  // An id free on every member of `over`, taken (rounds: take_comm_id). `payload` rides with
  // the offers: *payloads gets every member's, in rank order.
  Status agree_comm_id(Bootstrap& over, bool nested, const std::vector<uint8_t>& payload,
                       std::vector<uint8_t>* payloads, uint32_t* id);
  void free_retired_memory();     // no write can reach it any more
  void free_unused_gpu_memory();  // under busy_: what was given back, unless a kernel is under way
  // Under busy_: the peers' mappings given back, closed now even while a kernel is under way
  // (IpcMappings maps their chunks again).
  void close_ipc_mappings_now();
  // Fills the blob's id bitmap with the ids free here, and takes `id` when the members agreed
  // on it (false: another creation on this process took it first; try again).
  void offer_comm_ids(uint8_t* bitmap, bool nested);
  bool take_comm_id(Bootstrap& bootstrap, uint32_t id, bool nested, Status* st);
  void idle_progress_loop();
  // provider_watchdog.cc
  void watchdog_loop();
  // Time before counted_from (the process was stopped) does not count against a call.
  void watch_provider_calls(std::chrono::steady_clock::time_point now,
                            std::chrono::steady_clock::time_point counted_from);

  std::unique_ptr<Transport> transport_;
  EngineConfig config_;
  std::unique_ptr<GpuRuntime> gpu_;
  // GPU memory given back while low-latency kernels were under way (null without a GPU runtime);
  // declared before ipc_mappings_ and stages_, whose closes and frees come here.
  std::unique_ptr<GpuMemoryToFree> unused_gpu_memory_;
  // Peers' buffers mapped through CUDA IPC, for every communicator (null without a GPU runtime).
  std::unique_ptr<IpcMappings> ipc_mappings_;
  uint64_t process_key_ = 0;              // names this engine to its peers' IPC mappings
  int ll_kernels_under_way_ = 0;          // under busy_
  int hierarchical_calls_under_way_ = 0;  // under busy_
  // Pinned host slots for staged GPU calls, a set per call under way (null without a GPU
  // runtime).
  std::unique_ptr<StagePool> stages_;
  std::unique_ptr<MrCache> mr_cache_;  // null: the provider wants no registrations
  std::unordered_set<uint64_t> unregistrable_gpu_buffers_;
  std::unique_ptr<LateSends> late_sends_;  // notices failed calls could not post in time
  // Freed once every late write has come, or the transport is closed (comm_late_writes.cc).
  std::unique_ptr<RetiredMemory> retired_;
  std::bitset<4096> comm_ids_in_use_;    // nested ones too
  size_t nested_comms_ = 0;              // sub-communicators of hierarchical calls
  std::bitset<4096> comm_ids_reserved_;  // picked by a creation still confirming it
  // Identities of the engine's own buffers in mr_cache_: above every CUDA buffer id (a count
  // from 1 per process), which names GPU buffers there.
  uint64_t next_allocation_id_ = uint64_t{1} << 62;
  std::mutex busy_;
  mutable std::mutex last_mutex_;
  TunedChoice last_choice_;
  const char* last_algorithm_ = "none";  // a string literal: safe to hand out after unlocking
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> last_started_{0};  // the collective's kind, communicator and call
  bool stuck_reported_ = false;            // the watchdog's own
  std::thread idle_progress_;
  // Its own thread, not idle_progress_: that one may be the thread the provider holds.
  std::thread watchdog_;
  std::mutex watchdog_mutex_;
  std::condition_variable watchdog_wake_;  // at the engine's end
};

}  // namespace efacoll

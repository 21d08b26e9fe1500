// The engine's public C++ API: an Engine owns a transport; a Comm is a set of ranks that run
// collectives together. Nothing here knows MPI. The implementation's state lives behind these
// handles (src/engine/engine_core.h, comm_core.h).
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "efacoll/algo.h"
#include "efacoll/bootstrap.h"
#include "efacoll/status.h"
#include "efacoll/types.h"

namespace efacoll {

class Transport;
struct TransportInfo;
class GpuRuntime;
class EngineCore;
class CommCore;

// How every rank's buffers lie in one call, as the ranks agreed it (the MPI shim does, at times:
// mpi_shim/shim_routing.cc). The call's path is chosen by it, so ranks whose buffers differ
// still take the same one, each adapting its own data; kThisRank: by this rank's own buffers,
// which every rank must then pass alike.
enum class CallKinds : uint8_t { kThisRank, kAllHost, kAllGpu, kMixed };

struct CollArgs {
  CollKind kind = CollKind::kAllreduce;
  const void* sendbuf = nullptr;  // ignored when inplace
  void* recvbuf = nullptr;
  // allreduce: elements of the vector; allgather: elements each rank contributes.
  size_t count = 0;
  // reduce-scatter: elements each rank receives (size() entries).
  const size_t* recvcounts = nullptr;
  DType dtype = DType::kByte;
  ROp op = ROp::kSum;
  // allreduce: input in recvbuf; allgather: own block already in place in recvbuf;
  // reduce-scatter: the whole input vector in recvbuf, result at its start.
  bool inplace = false;
  // Where the buffers live (the shim asks the CUDA driver); GPU calls need a GpuRuntime.
  MemKind send_mem = MemKind::kHost;
  MemKind recv_mem = MemKind::kHost;
  // The GPU whose streams run the call's local work; for a call whose own buffers are all on the
  // host, with kAllGpu, the one its copies go to.
  int device = -1;
  uint64_t send_buffer_id = 0, recv_buffer_id = 0;  // CUDA allocation ids (0: unknown)
  CallKinds kinds = CallKinds::kThisRank;
  // This rank takes part only so that its peers stop: an earlier phase of a composite call
  // failed here. Every message and key it gives carries the poison signature, which no peer's
  // call matches; the call ends as a mismatch on every rank, sequences kept equal.
  bool abandoned = false;
};

struct EngineConfig {
  size_t chunk_bytes = 1 << 19;
  // The tuner keeps chunk_bytes (the shim clears this unless EFACOLL_CHUNK_SIZE is set).
  bool chunk_forced = true;
  // The largest chunk the tuner may pick (the engine lowers it to the transport's limit).
  size_t max_chunk_bytes = size_t(1) << 30;
  // Independent schedules per call, each on its share of the data and, with several NICs,
  // its own NIC (EFACOLL_CHANNELS; 0: the tuner picks up to max_channels).
  int channels = 0;
  int max_channels = 8;
  // Calls of at most this many bytes use the recursive algorithms (log2 P steps) instead of the
  // ring.
  size_t rd_max_bytes = 65536;
  // Algorithms forced per collective (EFACOLL_ALGO); kAuto: chosen per call, by the cost model
  // where `tune` (EFACOLL_TUNE), else by size (rd_max_bytes).
  AlgoOverrides algo;
  bool tune = true;
  CostModel model;
  // Each communicator measures its links at creation (EFACOLL_TUNE=calibrate) instead of
  // taking `model`.
  bool calibrate = false;
  // Online trials (EFACOLL_TUNE_TRIALS): calls per candidate where the model's predictions are
  // near each other (src/tune/trials.h); 0: the model's pick stands.
  int tune_trials = 0;
  std::chrono::milliseconds timeout{300000};
  // A call into the provider held its thread past `timeout` (it never returned, so the call
  // that made it cannot time out): the watchdog calls this once, from its thread, with the
  // message. Empty: the message is logged and the process aborts.
  std::function<void(const std::string&)> on_stuck_provider;
  // ...and past this too: a call that is slow, not stuck, must not end the job (under
  // ThreadSanitizer a tcp;ofi_rxm send that was connecting took over a second).
  std::chrono::milliseconds stuck_provider_min{10000};
  // Register and pass descriptors even where the provider does not ask for them.
  bool force_mr_local = false;
  size_t mr_cache_entries = 64;
  int stage_slots = 8;  // per direction, for GPU data through a provider without FI_HMEM
  // Flush GPUDirect writes before GPU work reads them (GpuRuntime::flush_network_writes):
  // kAuto asks the runtime (GPUs before Hopper).
  enum class GdrFlush { kAuto, kOn, kOff };
  GdrFlush gdr_flush = GdrFlush::kAuto;
  // GPU calls moving at most this many bytes (send + receive) run on host copies: two copies
  // cost less than staging every step through streams and events.
  size_t gpu_host_path_max = 65536;
  // Inside one node, GPU data moves through CUDA IPC (NVLink or PCIe peer access) in rounds of
  // this many bytes (0: never through IPC).
  size_t ipc_chunk_bytes = size_t(32) << 20;
  // Read and write the peers' own buffers (mapped once per allocation) instead of rounds
  // through the workspace.
  bool ipc_direct = true;
  // Inside one node, GPU calls in which each rank pushes at most this many bytes to its peers
  // (together) use the low-latency protocol (one kernel, flags in peer memory, no host
  // barrier). 0: off.
  size_t ipc_ll_max_bytes = size_t(2) << 20;
  // Under `concurrent`, those calls lend the lock while their kernel waits (false: they keep it,
  // and such calls of different threads must come in one order on every rank).
  bool ipc_ll_lend = true;
  // Testing: where the protocol's sequence starts (near 2^32 to cross the packed-flag wrap).
  uint64_t ipc_ll_seq_start = 0;
  // Across nodes, GPU allreduce runs its in-node phases over CUDA IPC (false: the whole
  // hierarchical allreduce goes through the fabric).
  bool hier_ipc = true;
  // Which node this process is on (empty: the host name); tests declare nodes with it.
  std::string node_name;
  // Between collectives, progress the provider this often (0: never). Manual-progress providers
  // (udp, EFA before libfabric 2.1) need it: a peer may still wait for our acknowledgements.
  std::chrono::microseconds idle_progress{500};
  // Several threads may run collectives at once, on different communicators
  // (MPI_THREAD_MULTIPLE): a host call waiting for peers lets the others' calls in, and
  // communicator ids are agreed in two rounds (a concurrent creation may have taken one).
  bool concurrent = false;
};

// What the engine holds now (efacoll_get_resource_usage).
struct ResourceUsage {
  size_t communicators = 0;      // the callers' (MPI communicators, in the library)
  size_t sub_communicators = 0;  // made for hierarchical calls, freed with their parents
  size_t mr_cache_entries = 0, mr_cache_bytes = 0, mr_cache_capacity = 0;
  uint64_t registrations = 0;  // made since start, cached or for one call
  // Memory retired after failed calls whose late writes have not all come (comm_late_writes.cc),
  // held now and retired since start.
  size_t retired_bytes_held = 0, retired_bytes_total = 0;
  // Given back while low-latency kernels ran, not yet freed (Engine::give_back_gpu_memory).
  size_t gpu_bytes_awaiting_free = 0;
  // Peers' memory mapped through CUDA IPC: user buffers kept across calls (IpcMappings' cache),
  // and any mapping (a workspace's too) no longer used but waiting,
  // as frees do, to be closed (they count 0 bytes above: the memory is the peer's).
  size_t ipc_mappings_cached = 0, ipc_mappings_capacity = 0, ipc_mappings_awaiting_close = 0;
};

class Comm;

// Node size L when the members (by node name) form nodes of L consecutive ranks, with more than
// one node and more than one rank per node; 0 otherwise.
int equal_contiguous_nodes(const std::vector<std::string>& nodes);

class Engine {
 public:
  Engine(std::unique_ptr<Transport> transport, const EngineConfig& config);
  // gpu may be null: GPU buffers are then kUnsupported (the shim stages them to MPI).
  Engine(std::unique_ptr<Transport> transport, const EngineConfig& config,
         std::unique_ptr<GpuRuntime> gpu);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Collective over the bootstrap's members: exchanges addresses, agrees on a communicator id.
  Status create_comm(Bootstrap& bootstrap, std::unique_ptr<Comm>* out);
  const TransportInfo& transport_info() const;
  GpuRuntime* gpu() const;
  const EngineConfig& config() const;
  // Forces algorithms from now on (EFACOLL_ALGO's grammar); every member of a communicator must
  // force the same before its next collective. kInvalid leaves the setting as it was.
  Status set_algo(const std::string& spec);
  // The algorithm of the last collective that ran a schedule, and the model's prediction for it.
  // Read by any thread (the C API under MPI_THREAD_MULTIPLE) while another's call records them.
  const char* last_algorithm() const;
  double last_predicted_us() const { return last_choice().predicted_us; }
  TunedChoice last_choice() const;
  ResourceUsage resource_usage();

 private:
  std::unique_ptr<EngineCore> core_;
};

class Comm {
 public:
  explicit Comm(std::unique_ptr<CommCore> core);
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  int rank() const;
  int size() const;
  uint32_t id() const;

  // Blocking. kUnsupported (nothing moved) means the caller may run it another way.
  Status run(const CollArgs& args);

 private:
  std::unique_ptr<CommCore> core_;
};

}  // namespace efacoll

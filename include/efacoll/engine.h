// The engine's public C++ API: an Engine owns a transport; a Comm is a set of ranks that run
// collectives together. Nothing here knows MPI.
#pragma once
#include <atomic>
#include <bitset>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "efacoll/algo.h"
#include "efacoll/bootstrap.h"
#include "efacoll/status.h"
#include "efacoll/types.h"

namespace efacoll {

class Transport;
struct TransportInfo;
struct Schedule;
struct RingArgs;
struct IpcState;
struct IpcCallKey;
struct HierState;
struct AlgoInputs;
struct RingPlan;
class ShapeTrial;
struct LlCall;
enum class LlPath : uint32_t;
class MrCache;
class LateSends;
class GpuRuntime;
class IpcMappings;
class StagePool;
struct StageSet;
struct GpuMemoryToFree;
struct GrowingDeviceBuffer;

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
  int device = -1;
  uint64_t send_buffer_id = 0, recv_buffer_id = 0;  // CUDA allocation ids (0: unknown)
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
  GpuRuntime* gpu() const { return gpu_.get(); }
  const EngineConfig& config() const { return config_; }
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
  friend class Comm;
  // inherit: a sub-communicator made inside a collective (whose lock is held) takes its
  // parent's cost model instead of calibrating.
  // ids_over: the members that agree on its id (null: bootstrap's). A hierarchical call's
  // sub-communicators agree over the whole parent, so that every rank of the parent runs the
  // same rounds through the parent's allgather, whichever subset it is in.
  Status create_comm(Bootstrap& bootstrap, std::unique_ptr<Comm>* out, const CostModel* inherit,
                     Bootstrap* ids_over);
  // An id free on every member of `over`, taken (rounds: take_comm_id). `payload` rides with
  // the offers: *payloads gets every member's, in rank order.
  Status agree_comm_id(Bootstrap& over, bool nested, const std::vector<uint8_t>& payload,
                       std::vector<uint8_t>* payloads, uint32_t* id);
  // Frees what was retired once the transport awaits no late write and holds no operation, and
  // no hierarchical call is under way (comm_late_writes.cc).
  void release_retired_memory();
  void free_retired_memory();  // no write can reach it any more
  // Under busy_: `memory` is freed now, or once no low-latency kernel of this engine is under way
  // (engine/gpu_memory_to_free.h).
  void give_back_gpu_memory(GpuMemoryToFree memory);
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
  void note_call_started(CollKind kind, uint32_t comm_id, uint32_t seq);
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
  uint64_t process_key_ = 0;      // names this engine to its peers' IPC mappings
  int ll_kernels_under_way_ = 0;  // under busy_
  // Under busy_. A phase that fails retires the slices it received into, and the call's later
  // phases, abandoned, still run in them: retired memory stays until such calls end.
  int hierarchical_calls_under_way_ = 0;
  // Pinned host slots for staged GPU calls, a set per call under way (null without a GPU
  // runtime).
  std::unique_ptr<StagePool> stages_;
  std::unique_ptr<MrCache> mr_cache_;      // null: the provider wants no registrations
  // CUDA buffer ids of GPU allocations the provider refused to register: staged (comm_execute).
  std::unordered_set<uint64_t> unregistrable_gpu_buffers_;
  std::unique_ptr<LateSends> late_sends_;  // notices failed calls could not post in time
  // Memory a failed call's receives named, which their senders may still write
  // (comm_late_writes.cc): freed once every such write has come, or the transport is closed.
  std::vector<std::vector<uint8_t>> retired_host_;
  std::unique_ptr<GpuMemoryToFree> retired_gpu_;  // null without a GPU runtime
  size_t retired_bytes_held_ = 0, retired_bytes_total_ = 0;
  std::bitset<4096> comm_ids_in_use_;    // nested ones too
  size_t nested_comms_ = 0;              // sub-communicators of hierarchical calls
  std::bitset<4096> comm_ids_reserved_;  // picked by a creation still confirming it
  // Identities of the engine's own buffers in mr_cache_: above every CUDA buffer id (a count
  // from 1 per process), which names GPU buffers there.
  uint64_t next_allocation_id_ = uint64_t{1} << 62;
  // Held by a running collective (released while a host call waits, when config_.concurrent);
  // the idle progress thread only try_locks it.
  std::mutex busy_;
  // What the last call chose, both at once under last_mutex_: a reader never pairs one call's
  // choice with another's algorithm. `algorithm`: a string literal.
  void record_call(const TunedChoice& choice, const char* algorithm);
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

class Comm {
 public:
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  uint32_t id() const { return id_; }

  // Blocking. kUnsupported (nothing moved) means the caller may run it another way.
  Status run(const CollArgs& args);

 private:
  friend class Engine;
  Comm(Engine* engine, int rank, int size, uint32_t id);
  Status run_locked(const CollArgs& args);
  Status ensure_scratch(size_t bytes, bool on_gpu, int device);
  // This communicator's GPU memory and its sub-communicators', taken into `out` (which frees it
  // through Engine::give_back_gpu_memory).
  void take_gpu_memory(GpuMemoryToFree* out);
  // Grows `buffer` to at least `want` bytes on `device`: its old memory is given back to the
  // engine, the new allocated with the call's lock lent (engine/lock_lent.h).
  Status grow(GrowingDeviceBuffer& buffer, int device, size_t want);
  // comm_late_writes.cc: after a failed call whose receives may still be written
  // (ExecContext::late_write_targets, bits 1 << BufId).
  // `stage`: the call's staging slots (null: none).
  void retire_late_write_targets(unsigned targets, const CollArgs& args, const std::string& what,
                                 StageSet* stage);
  bool answer_stale(const void* message, size_t bytes);  // comm_stale.cc
  Status run_schedule(const CollArgs& args, Schedule& schedule, size_t send_bytes,
                      size_t recv_bytes, size_t chunk_bytes);
  bool hier_gpu_chosen(const CollArgs& a, const RingArgs& ring);
  // The call's algorithm, chunk and channels, then its schedule; recorded as the engine's last
  // call (Engine::record_call) once built.
  Status plan_schedule(CollKind kind, RingArgs& ring, Schedule* schedule);
  // comm_choice.cc: forced, the rule, the tuner's pick, or a candidate on trial.
  TunedChoice choose_call(const AlgoInputs& in);
  // A user call runs the candidate `t` has now (marked on trial). Before a sample's first call
  // the ranks meet (a one-byte allgather), so that each times it from a common start, not from
  // the skew the previous call left; once per call, its failure the call's (trial_call_.status).
  TunedChoice trial_choice(uint64_t key, ShapeTrial& t);
  // That call ended: its time counts for the candidate, and the shape's last trial call agrees
  // with the other ranks on the one to keep.
  void finish_trial_call(bool call_ok);
  // Inside one node, GPU buffers: the low-latency protocol, IPC (direct, or its rounds where it
  // cannot), or the fabric (where ranks share a GPU and it was measured faster;
  // comm_shared_gpu.cc). Recorded as the call's choice.
  enum class NodePath { kLowLatency, kIpcDirect, kFabric };
  Status node_protocol(const CollArgs& args, const RingPlan& plan, Algo forced, bool ll_possible,
                       NodePath* path);
  // Ranks share a GPU and the tuner chooses between IPC and the fabric.
  bool shared_gpu_tuned(Algo forced) const;
  // The tuner's fabric algorithm on the call's own buffers (host or GPU memory).
  Status run_planned_schedule(const CollArgs& args, RingPlan& plan);
  // A GPU call the fabric runs through pinned host copies: no rank moves more than
  // EFACOLL_GPU_HOST_PATH_MAX bytes (else the staged pipeline).
  bool takes_host_copies(CollKind kind, const RingArgs& ring) const;
  // The model's prediction for the fabric's pick where nothing is forced (nothing measured added,
  // no trials).
  double fabric_model_us(CollKind kind, const RingArgs& ring) const;
  // The fabric's algorithms the user's calls of this shape may run where nothing is forced: those
  // the online trials would run in turn (the model's pick first), or with trials off the pick
  // alone.
  std::vector<TunedChoice> fabric_candidates(CollKind kind, const RingArgs& ring) const;
  // comm_shared_gpu.cc: IPC and the fabric timed at a few sizes per call shape
  // (tune/shared_gpu_paths.h), once per communicator whose ranks share a GPU. Collective.
  Status measure_shared_gpu(int device);
  struct MeasuredCall;
  // Its parts: one call's arguments, plan and ways; its times (medians appended, IPC's then each
  // fabric candidate's); every rank's times made into the picks' extras, and logged.
  Status plan_measured_call(int device, const GrowingDeviceBuffer& send,
                            const GrowingDeviceBuffer& recv, MeasuredCall* c);
  Status time_measured_call(MeasuredCall& c, std::vector<double>* medians);
  void record_measured_calls(const std::vector<MeasuredCall>& calls,
                             const std::vector<double>& all);
  // The call's way from those times (IPC, direct or in rounds, or the fabric), recorded as its
  // choice.
  Status shared_gpu_way(const CollArgs& args, const RingPlan& plan, double ipc_model_us,
                        NodePath* path);
  Status run_gpu_via_host(const CollArgs& args, RingArgs& ring, size_t send_bytes,
                          size_t recv_bytes, size_t result_bytes);
  // comm_ipc.cc
  // A ring allgather of host memory (chunk_bytes 0: the configured chunk).
  Status host_allgather(const void* in, size_t bytes, void* out, size_t chunk_bytes = 0);
  bool ipc_usable(int device);
  Status run_ipc(const CollArgs& args, const RingArgs& ring);
  // comm_ipc_direct.cc
  bool ipc_direct_possible(const CollArgs& args) const;
  Status compare_ipc_keys(const CollArgs& args, const IpcCallKey& mine,
                          const std::vector<IpcCallKey>& keys) const;
  Status run_ipc_direct(const CollArgs& args, const RingArgs& ring);
  // comm_ipc_ll.cc
  bool ipc_ll_plan(const CollArgs& args, LlCall* call) const;
  Status run_ipc_ll(const CollArgs& args, LlCall& call);  // at the sequence advance_ll_seq set
  Status advance_ll_seq();
  // comm_ll_paths.cc: calls of one sequence that took different paths inside the node.
  Status read_ll_keys(std::vector<uint64_t>* words);  // this rank's region, this sequence
  void watch_ll_peers(CollKind kind, LlPath path, const IpcCallKey& call);
  Status join_peers_exchange(const IpcCallKey& call);
  // comm_stale.cc: messages a failed call left in the provider's queue.
  void remember_failed_call(uint32_t seq);
  void drop_stale_messages();  // of failed calls half way round the tag's sequence
  Status drop_messages_of(uint32_t seq);
  // comm_calibrate.cc
  Status calibrate();
  Status calibrate_algorithms();
  // comm_hier.cc
  class PhaseRunner;
  bool hier_gpu_usable(int device);
  bool hier_gpu_fits(const CollArgs& args) const;
  Status run_hier_gpu(const CollArgs& args);
  Status run_hier_gpu_allreduce(const CollArgs& args);
  Status run_hier_gpu_allgather(const CollArgs& args);
  Status run_hier_gpu_reduce_scatter(const CollArgs& args);

  Engine* engine_;
  int rank_, size_;
  uint32_t id_;
  uint32_t seq_ = 0;
  // Given to the next schedule's executor (ExecContext::on_stall), then cleared.
  std::function<Status()> stall_check_;
  std::vector<uint32_t> failed_seqs_;  // sequences of failed calls whose messages may be queued
  // The engine's lock while run() holds it and may lend it out (see EngineConfig::concurrent).
  std::unique_lock<std::mutex>* yield_lock_ = nullptr;
  // The lock the running call may lend while it waits for peers: run()'s, or for a
  // sub-communicator its parent's call's.
  std::unique_lock<std::mutex>* lendable_lock() const;
  bool nested_ = false;     // made inside a collective of its parent, whose lock covers it
  Comm* parent_ = nullptr;  // of a sub-communicator
  std::vector<uint64_t> peers_;
  std::vector<uint8_t> scratch_;
  uint64_t scratch_id_ = 0;
  std::unique_ptr<GrowingDeviceBuffer> gpu_scratch_;  // its identity in mr_cache_: scratch_id_
  void* pinned_ = nullptr;                            // host copies of small GPU calls
  size_t pinned_bytes_ = 0;
  // Device copies of the host buffers of GPU calls that mix host and GPU buffers.
  std::unique_ptr<GrowingDeviceBuffer> send_copy_, recv_copy_;
  bool one_node_ = false;  // every member on this node
  int hier_per_node_ = 0;  // >0: nodes of this many consecutive ranks (hierarchical allreduce)
  std::unique_ptr<IpcState> ipc_;
  std::unique_ptr<HierState> hier_;
  CostModel model_;  // the engine's, or this communicator's own measurement (EFACOLL_TUNE)
  std::unordered_map<uint64_t, TunedChoice> tuned_;  // the tuner's picks per call shape
  // Online trials per call shape (EngineConfig::tune_trials), running or settled.
  std::unordered_map<uint64_t, std::unique_ptr<ShapeTrial>> trials_;
  bool user_call_ = false;  // inside run(): trials time only the user's own calls
  // Set by each run_locked: the call's data lies on GPUs, which the fabric stages or copies
  // through host memory. Its trials and picks are kept apart from those of host-buffer calls of
  // the same shape, whose algorithms' times differ. Each rank reads its own buffers: every rank
  // must pass the same kind in a call (README), as the shim's routing already requires.
  bool gpu_call_ = false;
  // Added to the prediction the fabric path records (last_choice_): where ranks share a GPU, the
  // measured time over the model's (set by node_protocol, cleared by each run_locked).
  double node_fabric_extra_us_ = 0;
  // Set while the shared-GPU measurement times a fabric candidate: plan_schedule runs it.
  const TunedChoice* timed_choice_ = nullptr;
  // The user call now running, where it runs a candidate on trial (reset by run()).
  struct TrialCall {
    bool running = false;  // it runs a candidate of trials_[key]
    uint64_t key = 0;
    Status status;  // of the ranks' meeting before it
    std::chrono::steady_clock::time_point start;
  } trial_call_;
};

}  // namespace efacoll

// One communicator's implementation: its ranks' addresses, sequence numbers, scratch and
// staging memory, the tuner's picks and trials, the fabric schedules it runs, and the execution
// of each call's plan (tune/plan.h) on its path; the other paths are classes of their own
// (engine/paths/), owned here. Implemented across src/engine/comm*.cc, one topic each; behind
// the public Comm handle (include/efacoll/engine.h).
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "efacoll/engine.h"

namespace efacoll {

class EngineCore;
struct Schedule;
struct RingArgs;
class IpcPaths;
class HierarchicalPath;
struct SharedGpuState;
struct AlgoInputs;
struct RingPlan;
class ShapeTrial;
struct LlCall;
struct PlanFacts;
struct Plan;
struct SharedGpuPick;
enum class LlPath : uint32_t;
struct StageSet;
struct GpuMemoryToFree;
struct GrowingDeviceBuffer;
class HostCopiesPath;

class CommCore {
 public:
  // What the engine learnt of the communicator when it made it.
  struct Setup {
    int rank = 0, size = 1;
    uint32_t id = 0;
    bool nested = false;    // made inside a collective of its parent, whose lock covers it
    bool one_node = false;  // every member on this node
    int hier_per_node = 0;  // >0: nodes of this many consecutive ranks
    std::vector<uint64_t> peers;
    CostModel model;
  };
  CommCore(EngineCore* engine, Setup setup);
  ~CommCore();
  CommCore(const CommCore&) = delete;
  CommCore& operator=(const CommCore&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  uint32_t id() const { return id_; }

  // Blocking. kUnsupported (nothing moved) means the caller may run it another way.
  Status run(const CollArgs& args);
  // At creation (EFACOLL_TUNE=calibrate): measures its links and algorithms. Collective; `busy`
  // is the engine's lock, lent while it waits for peers where calls may run concurrently.
  Status calibrate_at_creation(std::unique_lock<std::mutex>& busy);

  // For the hierarchical path, on its sub-communicators:
  // a phase of the parent's call (whose lock covers it);
  Status run_phase(const CollArgs& args) { return run_locked(args); }
  // whether every member is on this node and reaches the others' GPUs over CUDA IPC (collective
  // at its first call);
  bool ipc_in_node(int device) { return one_node_ && ipc_usable(device); }
  // the low-latency kernel off (nodes declared on one machine share its GPUs).
  void turn_off_low_latency();
  // This communicator's GPU memory and its sub-communicators', taken into `out` (which frees it
  // through EngineCore::give_back_gpu_memory).
  void take_gpu_memory(GpuMemoryToFree* out);

 private:
  Status run_locked(const CollArgs& args);
  class CallQuestions;  // the plan's questions (tune/plan.h), answered for one call
  Status ensure_scratch(size_t bytes, bool on_gpu, int device);
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
  // A GPU call's facts for the plan (tune/plan.h); the collective ones (IPC set up, the
  // shared-GPU measurement) are learnt here, at the same call on every rank.
  Status gpu_plan_facts(const CollArgs& args, const RingPlan& ring, PlanFacts* facts,
                        LlCall* ll_call);
  // Runs a GPU call's plan (host buffers of a mixed call through device copies).
  Status run_gpu_plan(const CollArgs& args, RingPlan& ring, const Plan& plan, LlCall& ll_call);
  // The tuner's fabric algorithm, chunk and channels for the call (may start an online trial).
  TunedChoice fabric_choice(CollKind kind, const RingArgs& ring);
  // The call's schedule by `choice` (its prediction plus `extra_us`, measured); recorded as the
  // engine's last call (EngineCore::record_call) once built.
  Status plan_schedule(CollKind kind, RingArgs& ring, TunedChoice choice, double extra_us,
                       Schedule* schedule);
  // comm_choice.cc: forced, the rule, the tuner's pick, or a candidate on trial.
  TunedChoice choose_call(const AlgoInputs& in);
  // A user call runs the candidate `t` has now (marked on trial). Before a sample's first call
  // the ranks meet (a one-byte allgather), so that each times it from a common start, not from
  // the skew the previous call left; once per call, its failure the call's (trial_call_.status).
  TunedChoice trial_choice(uint64_t key, ShapeTrial& t);
  // That call ended: its time counts for the candidate, and the shape's last trial call agrees
  // with the other ranks on the one to keep.
  void finish_trial_call(bool call_ok);
  // Ranks share a GPU and the tuner chooses between IPC and the fabric.
  bool shared_gpu_tuned(Algo forced) const;
  // The fabric algorithm `choice` on the call's own buffers (host or GPU memory).
  Status run_planned_schedule(const CollArgs& args, RingPlan& plan, const TunedChoice& choice,
                              double extra_us);
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
  // IPC against the fabric for this call shape by those times (kept per shape).
  const SharedGpuPick& shared_gpu_pick(const CollArgs& args, const RingPlan& plan,
                                       double ipc_model_us);
  // Copies in, runs the fabric's `choice` on pinned host copies, copies the result back.
  Status run_gpu_via_host(const CollArgs& args, RingPlan& plan, const TunedChoice& choice,
                          double extra_us);
  // comm_paths.cc: the paths of engine/paths/, made at the first call that asks (collective).
  // A ring allgather of host memory (chunk_bytes 0: the configured chunk): set-ups' exchanges
  // and the node paths' barriers.
  Status host_allgather(const void* in, size_t bytes, void* out, size_t chunk_bytes = 0);
  bool ipc_usable(int device);  // on `device`
  // A call off the low-latency protocol watches for peers in it while it waits.
  void watch_ll_peers(CollKind kind, LlPath path, const CollArgs& args, const RingArgs& ring);
  bool hier_usable(int device);  // on `device`
  Status run_hierarchical(const CollArgs& args);
  // comm_stale.cc: messages a failed call left in the provider's queue.
  void remember_failed_call(uint32_t seq);
  void drop_stale_messages();  // of failed calls half way round the tag's sequence
  Status drop_messages_of(uint32_t seq);
  // comm_calibrate.cc
  Status calibrate();
  Status calibrate_algorithms();
  EngineCore* engine_;
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
  bool nested_ = false;         // made inside a collective of its parent, whose lock covers it
  CommCore* parent_ = nullptr;  // of a sub-communicator
  std::vector<uint64_t> peers_;
  std::vector<uint8_t> scratch_;
  uint64_t scratch_id_ = 0;
  std::unique_ptr<GrowingDeviceBuffer> gpu_scratch_;  // its identity in mr_cache_: scratch_id_
  // Device copies of the host buffers of GPU calls that mix host and GPU buffers.
  std::unique_ptr<GrowingDeviceBuffer> send_copy_, recv_copy_;
  std::unique_ptr<HostCopiesPath> host_copies_;  // small GPU calls through pinned host memory
  bool one_node_ = false;                        // every member on this node
  int hier_per_node_ = 0;  // >0: nodes of this many consecutive ranks (hierarchical allreduce)
  std::unique_ptr<IpcPaths> ipc_;           // made at the first call that could use IPC
  std::unique_ptr<HierarchicalPath> hier_;  // made at the first call that could take it
  std::unique_ptr<SharedGpuState> shared_;  // IPC and the fabric measured where ranks share GPUs
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
  // The user call now running, where it runs a candidate on trial (reset by run()).
  struct TrialCall {
    bool running = false;  // it runs a candidate of trials_[key]
    uint64_t key = 0;
    Status status;  // of the ranks' meeting before it
    std::chrono::steady_clock::time_point start;
  } trial_call_;
};

}  // namespace efacoll

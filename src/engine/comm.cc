// A communicator's collective call: plan the ring, choose where local work runs (host or the
// buffers' GPU), stage GPU data through pinned host slots when the provider cannot touch GPU
// memory, register what the provider wants registered, and run the schedule.
#include <algorithm>
#include <utility>

#include "coll/registry.h"
#include "common/log.h"
#include "core/executor.h"
#include "core/staging.h"
#include "engine/comm_core.h"
#include "engine/engine_core.h"
#include "engine/gpu_memory_to_free.h"
#include "engine/growing_device_buffer.h"
#include "engine/lock_lent.h"
#include "engine/paths/hierarchical.h"
#include "engine/paths/host_copies.h"
#include "engine/paths/ipc_paths.h"
#include "engine/ring_plan.h"
#include "engine/shared_gpu_state.h"
#include "gpu/gpu_runtime.h"
#include "gpu/ll_protocol.h"
#include "gpu/memory_kind.h"
#include "transport/mr_cache.h"
#include "transport/transport.h"
#include "tune/algo.h"
#include "tune/cost_model.h"
#include "tune/plan.h"
#include "tune/shared_gpu_paths.h"
#include "tune/trials.h"

namespace efacoll {

CommCore::CommCore(EngineCore* engine, Setup setup)
    : engine_(engine),
      rank_(setup.rank),
      size_(setup.size),
      id_(setup.id),
      nested_(setup.nested),
      peers_(std::move(setup.peers)),
      gpu_scratch_(std::make_unique<GrowingDeviceBuffer>()),
      send_copy_(std::make_unique<GrowingDeviceBuffer>()),
      recv_copy_(std::make_unique<GrowingDeviceBuffer>()),
      host_copies_(std::make_unique<HostCopiesPath>(
          engine->gpu(),
          [engine](GpuMemoryToFree memory) { engine->give_back_gpu_memory(std::move(memory)); })),
      one_node_(setup.one_node),
      hier_per_node_(setup.hier_per_node),
      shared_(std::make_unique<SharedGpuState>()),
      model_(std::move(setup.model)) {}

Status CommCore::calibrate_at_creation(std::unique_lock<std::mutex>& busy) {
  // Its calls lend the engine's lock while they wait, as the user's calls do.
  yield_lock_ = engine_->config().concurrent ? &busy : nullptr;
  Status st = calibrate();
  // Kept while it measures the algorithms: it forces them engine-wide meanwhile.
  yield_lock_ = nullptr;
  if (st.is_ok()) st = calibrate_algorithms();
  return st;
}

CommCore::~CommCore() {
  // Other threads may be running collectives (MPI_Comm_free under MPI_THREAD_MULTIPLE).
  std::unique_lock<std::mutex> busy(engine_->busy(), std::defer_lock);
  if (!nested_) busy.lock();
  // Sub-communicators' memory too: they go with hier_. Peers' workspaces mapped through CUDA IPC
  // are closed the same way (gpu_memory_to_free.h).
  GpuMemoryToFree memory;
  take_gpu_memory(&memory);
  if (!memory.empty()) engine_->give_back_gpu_memory(std::move(memory));
  hier_.reset();
  ipc_.reset();
  engine_->comm_freed(id_, nested_);
}

void CommCore::take_gpu_memory(GpuMemoryToFree* out) {
  // Registrations go before the memory.
  MrCache* mrs = engine_->mr_cache();
  if (mrs) mrs->forget(scratch_id_);
  host_copies_->give_memory(out);
  if (ipc_) ipc_->give_memory(out);
  std::vector<GrowingDeviceBuffer*> grown = {gpu_scratch_.get(), send_copy_.get(), recv_copy_.get(),
                                             &shared_->probe_send, &shared_->probe_recv};
  if (hier_) {
    for (auto [buffer, what] : hier_->buffers()) grown.push_back(buffer);
    for (CommCore* sub : hier_->subs())
      if (sub) sub->take_gpu_memory(out);
  }
  for (GrowingDeviceBuffer* b : grown) {
    if (mrs && b->buffer_id != 0) mrs->forget(b->buffer_id);
    if (b->ptr) out->add_device(b->device, b->ptr, b->bytes);
    b->ptr = nullptr;
    b->bytes = 0;
  }
}

Status CommCore::grow(GrowingDeviceBuffer& b, int dev, size_t want) {
  if (b.ptr && b.device == dev && b.bytes >= want) return Status::ok();
  // Its registration goes before the memory (a slice's, cached under its CUDA buffer id).
  if (engine_->mr_cache() && b.buffer_id != 0) engine_->mr_cache()->forget(b.buffer_id);
  if (b.ptr)
    engine_->give_back_gpu_memory(GpuMemoryToFree::device_memory(b.device, b.ptr, b.bytes));
  b.buffer_id = 0;
  b.ptr = nullptr;
  b.bytes = 0;
  b.gpu = engine_->gpu();
  b.device = dev;
  {
    LockLent lent(lendable_lock());
    EFACOLL_RETURN_IF_ERROR(b.gpu->alloc_device(dev, want, &b.ptr));
  }
  b.bytes = want;
  b.buffer_id = query_memory(b.ptr).buffer_id;
  return Status::ok();
}

Status CommCore::ensure_scratch(size_t bytes, bool on_gpu, int device) {
  const GrowingDeviceBuffer& gpu = *gpu_scratch_;
  const size_t have = on_gpu ? (gpu.ptr && gpu.device == device ? gpu.bytes : 0) : scratch_.size();
  if (have >= bytes) return Status::ok();
  // Registered under scratch_id_, the same for either: a new one for the grown memory.
  if (engine_->mr_cache()) engine_->mr_cache()->forget(scratch_id_);
  scratch_id_ = engine_->new_allocation_id();
  if (!on_gpu) {
    scratch_.assign(std::max(bytes, scratch_.size() * 2), 0);
    return Status::ok();
  }
  return grow(*gpu_scratch_, device, std::max(bytes, gpu.bytes * 2));
}

Status CommCore::plan_schedule(CollKind kind, RingArgs& ring, TunedChoice choice, double extra_us,
                               Schedule* schedule) {
  choice.predicted_us += extra_us;
  EFACOLL_RETURN_IF_ERROR(trial_call_.status);
  if (choice.chunk_bytes) ring.chunk_bytes = choice.chunk_bytes;
  const ScheduleBuilder* builder = find_schedule_builder(choice.algo, kind);
  if (builder == nullptr) return Status(Code::kInternal, "no schedule builder for the choice");
  EFACOLL_RETURN_IF_ERROR(
      build_call_schedule(*builder, ring, hier_per_node_, choice.channels, schedule));
  engine_->record_call(choice, schedule->algorithm);
  return Status::ok();
}

Status CommCore::run_planned_schedule(const CollArgs& args, RingPlan& plan,
                                      const TunedChoice& choice, double extra_us) {
  Schedule schedule;
  EFACOLL_RETURN_IF_ERROR(plan_schedule(args.kind, plan.ring, choice, extra_us, &schedule));
  return run_schedule(args, schedule, plan.send_bytes, plan.recv_bytes, plan.ring.chunk_bytes);
}

TunedChoice CommCore::fabric_choice(CollKind kind, const RingArgs& ring) {
  return choose_call(algo_inputs(kind, ring, hier_per_node_, engine_->config()));
}

bool CommCore::takes_host_copies(CollKind kind, const RingArgs& ring) const {
  return most_bytes_of_a_rank(kind, ring) <= engine_->config().gpu_host_path_max;
}

double CommCore::fabric_model_us(CollKind kind, const RingArgs& ring) const {
  const EngineConfig& config = engine_->config();
  return tune_algo(model_, algo_inputs(kind, ring, hier_per_node_, config), AlgoOverrides(), false)
      .predicted_us;
}

std::unique_lock<std::mutex>* CommCore::lendable_lock() const {
  return parent_ ? parent_->lendable_lock() : yield_lock_;
}

Status CommCore::run(const CollArgs& args) {
  std::unique_lock<std::mutex> busy(engine_->busy());
  // Calls lend the lock out while they wait for peers; GPU calls have streams, staging slots
  // and low-latency kernel streams of their own (comm_execute.cc, GpuRuntime::run_ll).
  yield_lock_ = engine_->config().concurrent ? &busy : nullptr;
  user_call_ = true;
  trial_call_ = TrialCall();
  Status st = run_locked(args);
  user_call_ = false;
  if (trial_call_.running) finish_trial_call(st.is_ok());
  yield_lock_ = nullptr;
  return st;
}

// The plan's costly questions, answered by this communicator for one call (on every call's
// path: no allocation).
class CommCore::CallQuestions : public PlanQuestions {
 public:
  CallQuestions(CommCore& comm, const CollArgs& args, const RingArgs& ring)
      : comm_(comm), args_(args), ring_(ring) {}
  TunedChoice fabric_choice() override { return comm_.fabric_choice(args_.kind, ring_); }
  bool hierarchical_usable() override { return comm_.hier_usable(args_.device); }

 private:
  CommCore& comm_;
  const CollArgs& args_;
  const RingArgs& ring_;
};

// Also the entry of a hierarchical call's phases, which run on sub-communicators.
Status CommCore::run_locked(const CollArgs& args) {
  RingPlan ring;
  const size_t chunk =
      std::min(engine_->config().chunk_bytes, engine_->transport()->info().max_msg_size);
  EFACOLL_RETURN_IF_ERROR(plan_ring(args, rank_, size_, chunk, &ring));
  // The plan follows how the ranks' buffers lie (the same on every rank); this rank's own
  // buffers decide only how it handles its data (staged, or copied to its GPU).
  const bool own_gpu = is_gpu(args.recv_mem) || (!args.inplace && is_gpu(args.send_mem));
  PlanFacts facts;
  facts.kind = args.kind;
  facts.gpu = args.kinds == CallKinds::kThisRank ? own_gpu : args.kinds != CallKinds::kAllHost;
  facts.mixed_kinds = args.kinds == CallKinds::kMixed;
  facts.bytes = call_bytes(ring.ring);
  facts.forced = engine_->config().algo.for_kind(args.kind);
  gpu_call_ = facts.gpu;
  CallQuestions questions(*this, args, ring.ring);
  const bool fabric_only = !facts.gpu || facts.mixed_kinds;
  if (fabric_only && !own_gpu) {
    const Plan plan = choose_plan(facts, questions);
    return run_planned_schedule(args, ring, plan.choice, plan.fabric_extra_us);
  }
  GpuRuntime* rt = engine_->gpu();
  if (rt == nullptr) return Status(Code::kUnsupported, "GPU buffers but no CUDA runtime");
  GpuRuntime::DeviceGuard guard(rt, args.device);
  LlCall ll_call;
  // A rank whose GPU data goes where the others' host data does asks nothing of the GPU paths:
  // their set-up is collective, and the other ranks do not reach it.
  if (!fabric_only) EFACOLL_RETURN_IF_ERROR(gpu_plan_facts(args, ring, &facts, &ll_call));
  const Plan plan = choose_plan(facts, questions);
  if (log_enabled(LogLevel::kTrace, kTune)) {
    EFACOLL_TRACE(kTune, "%s %zu B on %d ranks, GPU buffers: %s (%s)", coll_name(args.kind),
                  facts.bytes, size_, path_name(plan.path), plan.why);
  }
  if (plan.advances_ll_sequence) EFACOLL_RETURN_IF_ERROR(ipc_->advance_sequence());
  return run_gpu_plan(args, ring, plan, ll_call);
}

Status CommCore::gpu_plan_facts(const CollArgs& args, const RingPlan& ring, PlanFacts* f,
                                LlCall* ll_call) {
  const EngineConfig& config = engine_->config();
  // Peer to peer inside the node when every member is here and can reach the others' GPUs,
  // unless a fabric algorithm is forced (benchmarks compare them). ipc_usable() is collective
  // at its first call: every rank reaches it on the same call.
  f->ipc = one_node_ && size_ > 1 && config.ipc_chunk_bytes > 0 && !fabric_algo(f->forced) &&
           ipc_usable(args.device);
  f->host_copies_fit = takes_host_copies(args.kind, ring.ring);
  f->hier_possible = hier_per_node_ > 0 && config.hier_ipc && HierarchicalPath::fits(args, size_);
  if (!f->ipc) return Status::ok();
  f->ll_set_up = ipc_->low_latency_set_up();
  f->ll_fits = f->ll_set_up && ipc_->low_latency_plan(args, ll_call);
  f->ipc_direct = ipc_->direct_possible(args);
  CostInputs in;
  in.kind = args.kind;
  in.nranks = size_;
  in.bytes = f->bytes;
  f->ll_us = predict_node_us(model_, Algo::kLl, in);
  f->ipc_us = predict_node_us(model_, Algo::kIpc, in);
  EFACOLL_TRACE(kTune, "%s %zu B on %d GPUs of one node: low-latency %.1f us%s, IPC direct %.1f us",
                coll_name(args.kind), in.bytes, size_, f->ll_us, f->ll_fits ? "" : " (cannot run)",
                f->ipc_us);
  if (shared_gpu_tuned(f->forced)) {
    if (!shared_->paths.measured) EFACOLL_RETURN_IF_ERROR(measure_shared_gpu(args.device));
    // Where a rank could not take part, the model's rule stands.
    if (shared_gpu_tuned(f->forced)) f->shared = &shared_gpu_pick(args, ring, f->ipc_us);
  }
  return Status::ok();
}

Status CommCore::run_gpu_plan(const CollArgs& args, RingPlan& ring, const Plan& plan,
                              LlCall& ll_call) {
  GpuRuntime* rt = engine_->gpu();
  if (plan.path == Path::kHostCopies) {
    if (plan.watch_ll_peers) watch_ll_peers(args.kind, LlPath::kOther, args, ring.ring);
    Status st = run_gpu_via_host(args, ring, plan.choice, plan.fabric_extra_us);
    stall_check_ = nullptr;
    return st;
  }
  if (plan.path == Path::kLowLatency || plan.path == Path::kIpcDirect ||
      plan.path == Path::kIpcRounds) {
    engine_->record_call(plan.choice, path_name(plan.path));
  }
  // Host buffers in a GPU call are replaced by device copies (in and out), kept by the
  // communicator: freeing them after each call would wait for other threads' low-latency kernels
  // (gpu_memory_to_free.h). Their buffer ids stay 0: peers map them anew each call.
  CollArgs a = args;
  if (!args.inplace && !is_gpu(args.send_mem)) {
    EFACOLL_RETURN_IF_ERROR(grow(*send_copy_, args.device, std::max<size_t>(ring.send_bytes, 1)));
    if (ring.send_bytes)
      EFACOLL_RETURN_IF_ERROR(rt->copy(send_copy_->ptr, args.sendbuf, ring.send_bytes));
    a.sendbuf = send_copy_->ptr;
    a.send_mem = MemKind::kDevice;
    a.send_buffer_id = 0;
  }
  const bool host_recv = !is_gpu(args.recv_mem);
  if (host_recv) {
    EFACOLL_RETURN_IF_ERROR(grow(*recv_copy_, args.device, std::max<size_t>(ring.recv_bytes, 1)));
    // In place, the input is in the receive buffer.
    if (args.inplace && ring.recv_bytes)
      EFACOLL_RETURN_IF_ERROR(rt->copy(recv_copy_->ptr, args.recvbuf, ring.recv_bytes));
    a.recvbuf = recv_copy_->ptr;
    a.recv_mem = MemKind::kDevice;
    a.recv_buffer_id = 0;
  }
  Status st;
  switch (plan.path) {
    case Path::kLowLatency:
      st = ipc_->run_low_latency(a, ll_call);
      break;
    case Path::kIpcDirect:
    case Path::kIpcRounds: {
      const bool direct = plan.path == Path::kIpcDirect;
      if (plan.watch_ll_peers)
        watch_ll_peers(args.kind, direct ? LlPath::kIpcDirect : LlPath::kIpcRounds, args,
                       ring.ring);
      st = direct ? ipc_->run_direct(a, ring.ring) : ipc_->run_rounds(a, ring.ring);
      stall_check_ = nullptr;
      break;
    }
    case Path::kHierarchical:
      st = trial_call_.status.is_ok() ? run_hierarchical(a) : trial_call_.status;
      break;
    case Path::kFabric:
    case Path::kHostCopies:
      st = run_planned_schedule(a, ring, plan.choice, plan.fabric_extra_us);
      break;
  }
  if (st.is_ok() && host_recv) st = rt->copy(args.recvbuf, recv_copy_->ptr, ring.result_bytes);
  return st;
}

bool CommCore::shared_gpu_tuned(Algo forced) const {
  return ipc_ && ipc_->gpus_shared() && !shared_->paths.given_up && forced == Algo::kAuto &&
         engine_->config().tune;
}

Status CommCore::run_gpu_via_host(const CollArgs& args, RingPlan& plan, const TunedChoice& choice,
                                  double extra_us) {
  EFACOLL_RETURN_IF_ERROR(
      host_copies_->prepare(plan.send_bytes + plan.recv_bytes, lendable_lock()));
  return host_copies_->run(
      args, plan.send_bytes, plan.recv_bytes, plan.result_bytes,
      [&](const CollArgs& on_host) -> Status {
        Schedule schedule;
        EFACOLL_RETURN_IF_ERROR(plan_schedule(args.kind, plan.ring, choice, extra_us, &schedule));
        return run_schedule(on_host, schedule, plan.send_bytes, plan.recv_bytes,
                            plan.ring.chunk_bytes);
      });
}

}  // namespace efacoll

// A communicator's collective call: plan the ring, choose where local work runs (host or the
// buffers' GPU), stage GPU data through pinned host slots when the provider cannot touch GPU
// memory, register what the provider wants registered, and run the schedule.
#include <algorithm>
#include <utility>

#include "coll/builders.h"
#include "coll/channels.h"
#include "coll/hier_allreduce.h"
#include "common/log.h"
#include "core/executor.h"
#include "core/staging.h"
#include "efacoll/engine.h"
#include "engine/gpu_memory_to_free.h"
#include "engine/growing_device_buffer.h"
#include "engine/hier_state.h"
#include "engine/ipc_state.h"
#include "engine/lock_lent.h"
#include "engine/ring_plan.h"
#include "gpu/gpu_runtime.h"
#include "gpu/ll_protocol.h"
#include "gpu/memory_kind.h"
#include "transport/mr_cache.h"
#include "transport/transport.h"
#include "tune/algo.h"
#include "tune/cost_model.h"
#include "tune/shared_gpu_paths.h"
#include "tune/trials.h"

namespace efacoll {
namespace {

// The call's schedule with the chosen algorithm on the chosen channels.
Status build(CollKind kind, RingArgs& ring, int hier_per_node, const TunedChoice& chosen,
             Schedule* schedule) {
  const Algo algo = chosen.algo;
  if (chosen.chunk_bytes) ring.chunk_bytes = chosen.chunk_bytes;
  ChannelArgs ca;
  ca.kind = kind;
  ca.channels = chosen.channels;
  ca.ranks_per_node = hier_per_node;
  ca.rotate_ring = algo == Algo::kRing;
  ChannelBuilder one = [&](const RingArgs& sub, Schedule* s) -> Status {
    if (algo == Algo::kHier) {
      HierArgs h;
      h.rank = sub.rank;
      h.nranks = sub.nranks;
      h.ranks_per_node = hier_per_node;
      for (size_t c : sub.block_counts) h.count += c;
      h.elem_size = sub.elem_size;
      h.inplace = sub.inplace;
      h.chunk_bytes = sub.chunk_bytes;
      return build_hier_allreduce(h, s);
    }
    if (algo == Algo::kTree) {
      RingArgs tree = sub;
      tree.chunk_bytes = tree_chunk_bytes(call_bytes(sub), sub.chunk_bytes);
      return build_tree_allreduce(tree, s);
    }
    if (algo == Algo::kRecursive) {
      return kind == CollKind::kAllreduce   ? build_rd_allreduce(sub, s)
             : kind == CollKind::kAllgather ? build_rd_allgather(sub, s)
                                            : build_rh_reduce_scatter(sub, s);
    }
    return kind == CollKind::kAllreduce   ? build_ring_allreduce(sub, s)
           : kind == CollKind::kAllgather ? build_ring_allgather(sub, s)
                                          : build_ring_reduce_scatter(sub, s);
  };
  // More chunks than a tag can number: grow the chunk until they fit.
  for (;;) {
    Status st = build_channels(ca, ring, one, schedule);
    if (st.code() != Code::kInvalid || ring.chunk_bytes >= (size_t(1) << 40)) return st;
    ring.chunk_bytes *= 2;
  }
}

}  // namespace

Comm::Comm(Engine* engine, int rank, int size, uint32_t id)
    : engine_(engine),
      rank_(rank),
      size_(size),
      id_(id),
      gpu_scratch_(std::make_unique<GrowingDeviceBuffer>()),
      send_copy_(std::make_unique<GrowingDeviceBuffer>()),
      recv_copy_(std::make_unique<GrowingDeviceBuffer>()) {}

Comm::~Comm() {
  // Other threads may be running collectives (MPI_Comm_free under MPI_THREAD_MULTIPLE).
  std::unique_lock<std::mutex> busy(engine_->busy_, std::defer_lock);
  if (!nested_) busy.lock();
  // Sub-communicators' memory too: they go with hier_. Peers' workspaces mapped through CUDA IPC
  // are closed the same way (gpu_memory_to_free.h).
  GpuMemoryToFree memory;
  take_gpu_memory(&memory);
  if (!memory.empty()) engine_->give_back_gpu_memory(std::move(memory));
  hier_.reset();
  ipc_.reset();
  engine_->comm_ids_in_use_[id_] = false;
  if (nested_) --engine_->nested_comms_;
}

void Comm::take_gpu_memory(GpuMemoryToFree* out) {
  // Registrations go before the memory.
  MrCache* mrs = engine_->mr_cache_.get();
  if (mrs) mrs->forget(scratch_id_);
  if (pinned_) out->add_pinned(pinned_, pinned_bytes_);
  pinned_ = nullptr;
  pinned_bytes_ = 0;
  if (ipc_) {
    // Its own entry in peers is the workspace, not a mapping.
    for (void*& p : ipc_->peers) {
      if (p && p != ipc_->workspace) out->add_ipc_mapping(p);
      p = nullptr;
    }
    if (ipc_->workspace) out->add_device(ipc_->device, ipc_->workspace, ipc_->workspace_bytes);
    ipc_->workspace = nullptr;
  }
  std::vector<GrowingDeviceBuffer*> grown = {gpu_scratch_.get(), send_copy_.get(),
                                             recv_copy_.get()};
  if (ipc_) {
    grown.push_back(&ipc_->probe_send);
    grown.push_back(&ipc_->probe_recv);
  }
  if (hier_) {
    grown.push_back(&hier_->slice);
    grown.push_back(&hier_->gathered);
    for (Comm* sub : {hier_->node.get(), hier_->cross.get()})
      if (sub) sub->take_gpu_memory(out);
  }
  for (GrowingDeviceBuffer* b : grown) {
    if (mrs && b->buffer_id != 0) mrs->forget(b->buffer_id);
    if (b->ptr) out->add_device(b->device, b->ptr, b->bytes);
    b->ptr = nullptr;
    b->bytes = 0;
  }
}

Status Comm::grow(GrowingDeviceBuffer& b, int dev, size_t want) {
  if (b.ptr && b.device == dev && b.bytes >= want) return Status::ok();
  // Its registration goes before the memory (a slice's, cached under its CUDA buffer id).
  if (engine_->mr_cache_ && b.buffer_id != 0) engine_->mr_cache_->forget(b.buffer_id);
  if (b.ptr)
    engine_->give_back_gpu_memory(GpuMemoryToFree::device_memory(b.device, b.ptr, b.bytes));
  b.buffer_id = 0;
  b.ptr = nullptr;
  b.bytes = 0;
  b.gpu = engine_->gpu_.get();
  b.device = dev;
  {
    LockLent lent(lendable_lock());
    EFACOLL_RETURN_IF_ERROR(b.gpu->alloc_device(dev, want, &b.ptr));
  }
  b.bytes = want;
  b.buffer_id = query_memory(b.ptr).buffer_id;
  return Status::ok();
}

Status Comm::ensure_scratch(size_t bytes, bool on_gpu, int device) {
  const GrowingDeviceBuffer& gpu = *gpu_scratch_;
  const size_t have = on_gpu ? (gpu.ptr && gpu.device == device ? gpu.bytes : 0) : scratch_.size();
  if (have >= bytes) return Status::ok();
  // Registered under scratch_id_, the same for either: a new one for the grown memory.
  if (engine_->mr_cache_) engine_->mr_cache_->forget(scratch_id_);
  scratch_id_ = engine_->next_allocation_id_++;
  if (!on_gpu) {
    scratch_.assign(std::max(bytes, scratch_.size() * 2), 0);
    return Status::ok();
  }
  return grow(*gpu_scratch_, device, std::max(bytes, gpu.bytes * 2));
}

Status Comm::plan_schedule(CollKind kind, RingArgs& ring, Schedule* schedule) {
  TunedChoice choice =
      timed_choice_ ? *timed_choice_
                    : choose_call(algo_inputs(kind, ring, hier_per_node_, engine_->config_));
  choice.predicted_us += node_fabric_extra_us_;
  EFACOLL_RETURN_IF_ERROR(trial_call_.status);
  EFACOLL_RETURN_IF_ERROR(build(kind, ring, hier_per_node_, choice, schedule));
  engine_->record_call(choice, schedule->algorithm);
  return Status::ok();
}

Status Comm::run_planned_schedule(const CollArgs& args, RingPlan& plan) {
  Schedule schedule;
  EFACOLL_RETURN_IF_ERROR(plan_schedule(args.kind, plan.ring, &schedule));
  return run_schedule(args, schedule, plan.send_bytes, plan.recv_bytes, plan.ring.chunk_bytes);
}

bool Comm::takes_host_copies(CollKind kind, const RingArgs& ring) const {
  return most_bytes_of_a_rank(kind, ring) <= engine_->config_.gpu_host_path_max;
}

double Comm::fabric_model_us(CollKind kind, const RingArgs& ring) const {
  const EngineConfig& config = engine_->config_;
  return tune_algo(model_, algo_inputs(kind, ring, hier_per_node_, config), AlgoOverrides(), false)
      .predicted_us;
}

std::unique_lock<std::mutex>* Comm::lendable_lock() const {
  return parent_ ? parent_->lendable_lock() : yield_lock_;
}

Status Comm::run(const CollArgs& args) {
  std::unique_lock<std::mutex> busy(engine_->busy_);
  // Calls lend the lock out while they wait for peers; GPU calls have streams, staging slots
  // and low-latency kernel streams of their own (comm_execute.cc, GpuRuntime::run_ll).
  yield_lock_ = engine_->config_.concurrent ? &busy : nullptr;
  user_call_ = true;
  trial_call_ = TrialCall();
  Status st = run_locked(args);
  user_call_ = false;
  if (trial_call_.running) finish_trial_call(st.is_ok());
  yield_lock_ = nullptr;
  return st;
}

// Also the entry of a hierarchical call's phases, which run on sub-communicators.
Status Comm::run_locked(const CollArgs& args) {
  node_fabric_extra_us_ = 0;
  RingPlan plan;
  const size_t chunk =
      std::min(engine_->config_.chunk_bytes, engine_->transport_->info().max_msg_size);
  EFACOLL_RETURN_IF_ERROR(plan_ring(args, rank_, size_, chunk, &plan));
  const bool gpu = is_gpu(args.recv_mem) || (!args.inplace && is_gpu(args.send_mem));
  gpu_call_ = gpu;
  if (!gpu) return run_planned_schedule(args, plan);

  GpuRuntime* rt = engine_->gpu_.get();
  if (rt == nullptr) return Status(Code::kUnsupported, "GPU buffers but no CUDA runtime");
  GpuRuntime::DeviceGuard guard(rt, args.device);
  // Peer to peer inside the node when every member is here and can reach the others' GPUs,
  // unless a fabric algorithm is forced (benchmarks compare them). ipc_usable() is collective
  // at its first call: every rank reaches it on the same call.
  const Algo forced = engine_->config_.algo.for_kind(args.kind);
  const bool ipc =
      one_node_ && size_ > 1 && engine_->config_.ipc_chunk_bytes > 0 && !fabric_algo(forced);
  LlCall ll_call;
  bool ll = ipc && ipc_ll_plan(args, &ll_call) && ipc_usable(args.device) && ipc_->ll_usable;
  bool in_node = ipc && ipc_usable(args.device);
  // IPC direct even for calls the host path would take: forced, or measured faster where ranks
  // share a GPU.
  bool ipc_chosen = forced == Algo::kIpc;
  if (in_node) {
    NodePath path;
    EFACOLL_RETURN_IF_ERROR(node_protocol(args, plan, forced, ll, &path));
    ll = path == NodePath::kLowLatency;
    if (ipc_->ll_usable) EFACOLL_RETURN_IF_ERROR(advance_ll_seq());
    if (shared_gpu_tuned(forced)) ipc_chosen = path == NodePath::kIpcDirect;
    in_node = path != NodePath::kFabric;
  }
  // Off the low-latency protocol where peers may be on it (comm_ll_paths.cc).
  const bool watch = in_node && ipc_->ll_usable && !ll;
  if (!ll && !ipc_chosen && takes_host_copies(args.kind, plan.ring)) {
    if (watch) watch_ll_peers(args.kind, LlPath::kOther, ipc_call_key(args, plan.ring));
    Status st =
        run_gpu_via_host(args, plan.ring, plan.send_bytes, plan.recv_bytes, plan.result_bytes);
    stall_check_ = nullptr;
    return st;
  }
  // Host buffers in a GPU call are replaced by device copies (in and out), kept by the
  // communicator: freeing them after each call would wait for other threads' low-latency kernels
  // (gpu_memory_to_free.h). Their buffer ids stay 0: peers map them anew each call.
  CollArgs a = args;
  if (!args.inplace && !is_gpu(args.send_mem)) {
    EFACOLL_RETURN_IF_ERROR(grow(*send_copy_, args.device, std::max<size_t>(plan.send_bytes, 1)));
    if (plan.send_bytes)
      EFACOLL_RETURN_IF_ERROR(rt->copy(send_copy_->ptr, args.sendbuf, plan.send_bytes));
    a.sendbuf = send_copy_->ptr;
    a.send_mem = MemKind::kDevice;
    a.send_buffer_id = 0;
  }
  const bool host_recv = !is_gpu(args.recv_mem);
  if (host_recv) {
    EFACOLL_RETURN_IF_ERROR(grow(*recv_copy_, args.device, std::max<size_t>(plan.recv_bytes, 1)));
    // In place, the input is in the receive buffer.
    if (args.inplace && plan.recv_bytes)
      EFACOLL_RETURN_IF_ERROR(rt->copy(recv_copy_->ptr, args.recvbuf, plan.recv_bytes));
    a.recvbuf = recv_copy_->ptr;
    a.recv_mem = MemKind::kDevice;
    a.recv_buffer_id = 0;
  }
  Status st;
  if (ll) {
    st = run_ipc_ll(a, ll_call);
  } else if (in_node) {
    const bool direct = ipc_direct_possible(a);
    if (watch) {
      watch_ll_peers(args.kind, direct ? LlPath::kIpcDirect : LlPath::kIpcRounds,
                     ipc_call_key(args, plan.ring));
    }
    st = direct ? run_ipc_direct(a, plan.ring) : run_ipc(a, plan.ring);
    stall_check_ = nullptr;
  } else if (hier_per_node_ > 0 && engine_->config_.hier_ipc && hier_gpu_fits(a) &&
             hier_gpu_chosen(a, plan.ring) && hier_gpu_usable(args.device)) {
    st = trial_call_.status.is_ok() ? run_hier_gpu(a) : trial_call_.status;
  } else {
    st = run_planned_schedule(a, plan);
  }
  if (st.is_ok() && host_recv) st = rt->copy(args.recvbuf, recv_copy_->ptr, plan.result_bytes);
  return st;
}

// Inside one node: the low-latency protocol where it can run and is forced or predicted faster
// than IPC direct; where ranks share a GPU and the tuner chooses, IPC (direct, or its rounds
// where it cannot) or the fabric by their measured times; else IPC.
Status Comm::node_protocol(const CollArgs& args, const RingPlan& plan, Algo forced,
                           bool ll_possible, NodePath* path) {
  CostInputs in;
  in.kind = args.kind;
  in.nranks = size_;
  in.bytes = call_bytes(plan.ring);
  const double ll_us = predict_node_us(model_, Algo::kLl, in),
               ipc_us = predict_node_us(model_, Algo::kIpc, in);
  *path = NodePath::kIpcDirect;
  if (ll_possible && forced != Algo::kIpc && (forced == Algo::kLl || ll_us <= ipc_us))
    *path = NodePath::kLowLatency;
  if (shared_gpu_tuned(forced)) {
    if (!ipc_->shared_paths.measured) EFACOLL_RETURN_IF_ERROR(measure_shared_gpu(args.device));
    // Where a rank could not take part, the rule below stands.
    if (shared_gpu_tuned(forced)) return shared_gpu_way(args, plan, ipc_us, path);
  }
  const bool ll = *path == NodePath::kLowLatency;
  TunedChoice c;
  c.algo = ll ? Algo::kLl : Algo::kIpc;
  c.predicted_us = ll ? ll_us : ipc_us;
  engine_->record_call(c, ll                          ? "low-latency (IPC)"
                         : ipc_direct_possible(args) ? "IPC direct"
                                                     : "IPC rounds");
  EFACOLL_TRACE(kTune, "%s %zu B on %d GPUs of one node: low-latency %.1f us%s, IPC direct %.1f us",
                coll_name(args.kind), in.bytes, size_, ll_us, ll_possible ? "" : " (cannot run)",
                ipc_us);
  return Status::ok();
}

bool Comm::shared_gpu_tuned(Algo forced) const {
  return ipc_ && ipc_->gpu_shared && !ipc_->shared_paths.given_up && forced == Algo::kAuto &&
         engine_->config_.tune;
}

// Allreduce across nodes runs hierarchically unless the tuner (or EFACOLL_ALGO) prefers a flat
// algorithm, such as the ring whose channels cross from every GPU at large sizes. Allgather
// and reduce-scatter have no flat rival that keeps NVLink inside the node: always.
bool Comm::hier_gpu_chosen(const CollArgs& a, const RingArgs& ring) {
  if (a.kind != CollKind::kAllreduce) return true;
  const EngineConfig& config = engine_->config_;
  return choose_call(algo_inputs(a.kind, ring, hier_per_node_, config)).algo == Algo::kHier;
}

// Copies in (synchronously, after the caller's work on the legacy default stream), runs the
// host schedule on pinned copies, copies the result back.
Status Comm::run_gpu_via_host(const CollArgs& args, RingArgs& ring, size_t send_bytes,
                              size_t recv_bytes, size_t result_bytes) {
  GpuRuntime* rt = engine_->gpu_.get();
  const size_t need = send_bytes + recv_bytes;
  if (pinned_bytes_ < need) {
    if (pinned_)
      engine_->give_back_gpu_memory(GpuMemoryToFree::pinned_memory(pinned_, pinned_bytes_));
    pinned_ = nullptr;
    pinned_bytes_ = 0;
    LockLent lent(lendable_lock());
    EFACOLL_RETURN_IF_ERROR(rt->alloc_pinned(need, &pinned_));
    pinned_bytes_ = need;
  }
  auto* host_send = static_cast<uint8_t*>(pinned_);
  uint8_t* host_recv = host_send + send_bytes;
  CollArgs h = args;
  h.send_mem = h.recv_mem = MemKind::kPinnedHost;
  h.send_buffer_id = h.recv_buffer_id = 0;
  h.sendbuf = args.inplace ? nullptr : host_send;
  h.recvbuf = host_recv;
  if (!args.inplace && send_bytes)
    EFACOLL_RETURN_IF_ERROR(rt->copy(host_send, args.sendbuf, send_bytes));
  // In place, the input is in the receive buffer.
  if (args.inplace && recv_bytes)
    EFACOLL_RETURN_IF_ERROR(rt->copy(host_recv, args.recvbuf, recv_bytes));
  Schedule schedule;
  EFACOLL_RETURN_IF_ERROR(plan_schedule(args.kind, ring, &schedule));
  EFACOLL_RETURN_IF_ERROR(run_schedule(h, schedule, send_bytes, recv_bytes, ring.chunk_bytes));
  return result_bytes ? rt->copy(args.recvbuf, host_recv, result_bytes) : Status::ok();
}

}  // namespace efacoll

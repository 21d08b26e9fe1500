// A communicator's collective call: plan the ring, choose where local work runs (host or the
// buffers' GPU), stage GPU data through pinned host slots when the provider cannot touch GPU
// memory, register what the provider wants registered, and run the schedule.
#include <algorithm>

#include "coll/builders.h"
#include "coll/hier_allreduce.h"
#include "common/log.h"
#include "core/executor.h"
#include "core/staging.h"
#include "efacoll/engine.h"
#include "engine/hier_state.h"
#include "engine/ipc_state.h"
#include "gpu/gpu_runtime.h"
#include "gpu/ll_protocol.h"
#include "transport/mr_cache.h"
#include "transport/transport.h"
#include "tune/algo.h"
#include "tune/cost_model.h"

namespace efacoll {
namespace {

struct RingPlan {
  RingArgs ring;
  size_t send_bytes = 0, recv_bytes = 0;
  size_t result_bytes = 0;  // what the caller finds in recv afterwards
};

Status plan_ring(const CollArgs& args, int rank, int size, size_t chunk_bytes, RingPlan* plan) {
  const size_t esize = dtype_size(args.dtype);
  if (esize == 0) return Status(Code::kUnsupported, "unknown datatype");
  if (args.kind != CollKind::kAllgather && !op_allowed(args.dtype, args.op)) {
    return Status(Code::kUnsupported,
                  std::string(op_name(args.op)) + " is not defined on " + dtype_name(args.dtype));
  }
  RingArgs& ring = plan->ring;
  ring.rank = rank;
  ring.nranks = size;
  ring.elem_size = esize;
  ring.inplace = args.inplace;
  ring.chunk_bytes = chunk_bytes;
  switch (args.kind) {
    case CollKind::kAllreduce:
      ring.block_counts = even_blocks(args.count, size);
      plan->send_bytes = plan->recv_bytes = args.count * esize;
      break;
    case CollKind::kAllgather:
      ring.block_counts.assign(size, args.count);
      plan->send_bytes = args.count * esize;
      plan->recv_bytes = plan->send_bytes * size;
      break;
    case CollKind::kReduceScatter:
      if (args.recvcounts == nullptr) return Status(Code::kInvalid, "recvcounts missing");
      ring.block_counts.assign(args.recvcounts, args.recvcounts + size);
      for (size_t c : ring.block_counts) plan->send_bytes += c * esize;
      plan->recv_bytes = args.inplace ? plan->send_bytes : args.recvcounts[rank] * esize;
      plan->result_bytes = args.recvcounts[rank] * esize;
      return Status::ok();
    default:
      return Status(Code::kUnsupported, "unknown collective");
  }
  plan->result_bytes = plan->recv_bytes;
  return Status::ok();
}

// The algorithm for the call (forced by EFACOLL_ALGO, or chosen), built into a schedule.
Status build(CollKind kind, RingArgs& ring, int hier_per_node, const EngineConfig& config,
             const CostModel& model, Schedule* schedule, TunedChoice* chosen) {
  AlgoInputs in;
  in.kind = kind;
  for (size_t c : ring.block_counts) in.bytes += c * ring.elem_size;
  in.nranks = ring.nranks;
  in.ranks_per_node = hier_per_node;
  in.small_bytes = config.rd_max_bytes;
  in.chunk_bytes = ring.chunk_bytes;
  Algo algo;
  if (config.tune) {
    *chosen = tune_algo(model, in, config.algo, log_enabled(LogLevel::kTrace, kTune));
    EFACOLL_TRACE(kTune, "%s", chosen->explanation.c_str());
    algo = chosen->algo;
  } else {
    algo = choose_algo(in, config.algo);
    *chosen = TunedChoice();
    chosen->algo = algo;
  }
  if (algo == Algo::kRecursive && kind == CollKind::kAllreduce) {
    return build_rd_allreduce(ring, schedule);  // whole-vector messages: no chunk count limit
  }
  // More chunks than a tag can number: grow the chunk until they fit.
  for (;;) {
    Status st;
    if (algo == Algo::kHier) {
      HierArgs h;
      h.rank = ring.rank;
      h.nranks = ring.nranks;
      h.ranks_per_node = hier_per_node;
      for (size_t c : ring.block_counts) h.count += c;
      h.elem_size = ring.elem_size;
      h.inplace = ring.inplace;
      h.chunk_bytes = ring.chunk_bytes;
      st = build_hier_allreduce(h, schedule);
    } else if (algo == Algo::kTree) {
      RingArgs tree = ring;
      tree.chunk_bytes = tree_chunk_bytes(in.bytes, ring.chunk_bytes);
      st = build_tree_allreduce(tree, schedule);
    } else if (algo == Algo::kRecursive) {
      st = kind == CollKind::kAllgather ? build_rd_allgather(ring, schedule)
                                        : build_rh_reduce_scatter(ring, schedule);
    } else {
      st = kind == CollKind::kAllreduce   ? build_ring_allreduce(ring, schedule)
           : kind == CollKind::kAllgather ? build_ring_allgather(ring, schedule)
                                          : build_ring_reduce_scatter(ring, schedule);
    }
    if (st.code() != Code::kInvalid || ring.chunk_bytes >= (size_t(1) << 40)) return st;
    ring.chunk_bytes *= 2;
  }
}

// A device copy of a host buffer, for calls that mix host and GPU buffers: kernels cannot
// touch pageable host memory.
class DeviceTemp {
 public:
  DeviceTemp(GpuRuntime* gpu, int device) : gpu_(gpu), device_(device) {}
  ~DeviceTemp() {
    if (ptr_) gpu_->free_device(device_, ptr_);
  }
  Status make(size_t bytes, const void* fill_from) {
    EFACOLL_RETURN_IF_ERROR(gpu_->alloc_device(device_, bytes, &ptr_));
    return fill_from && bytes ? gpu_->copy(ptr_, fill_from, bytes) : Status::ok();
  }
  void* get() const { return ptr_; }

 private:
  GpuRuntime* gpu_;
  int device_;
  void* ptr_ = nullptr;
};

}  // namespace

Comm::Comm(Engine* engine, int rank, int size, uint32_t id)
    : engine_(engine), rank_(rank), size_(size), id_(id) {}

Comm::~Comm() {
  hier_.reset();
  ipc_.reset();
  if (engine_->mr_cache_) engine_->mr_cache_->forget(scratch_id_);
  if (gpu_scratch_) engine_->gpu_->free_device(gpu_scratch_device_, gpu_scratch_);
  if (pinned_) engine_->gpu_->free_pinned(pinned_);
  engine_->comm_ids_in_use_[id_] = false;
}

Status Comm::ensure_scratch(size_t bytes, bool on_gpu, int device) {
  const size_t have =
      on_gpu ? (gpu_scratch_device_ == device ? gpu_scratch_bytes_ : 0) : scratch_.size();
  if (have >= bytes) return Status::ok();
  if (engine_->mr_cache_) engine_->mr_cache_->forget(scratch_id_);
  scratch_id_ = engine_->next_allocation_id_++;
  if (!on_gpu) {
    scratch_.assign(std::max(bytes, scratch_.size() * 2), 0);
    return Status::ok();
  }
  const size_t want = std::max(bytes, gpu_scratch_bytes_ * 2);
  if (gpu_scratch_) engine_->gpu_->free_device(gpu_scratch_device_, gpu_scratch_);
  gpu_scratch_ = nullptr;
  gpu_scratch_bytes_ = 0;
  EFACOLL_RETURN_IF_ERROR(engine_->gpu_->alloc_device(device, want, &gpu_scratch_));
  gpu_scratch_bytes_ = want;
  gpu_scratch_device_ = device;
  return Status::ok();
}

Status Comm::run(const CollArgs& args) {
  std::lock_guard<std::mutex> busy(engine_->busy_);
  return run_locked(args);
}

// Also the entry of a hierarchical call's phases, which run on sub-communicators.
Status Comm::run_locked(const CollArgs& args) {
  RingPlan plan;
  const size_t chunk =
      std::min(engine_->config_.chunk_bytes, engine_->transport_->info().max_msg_size);
  EFACOLL_RETURN_IF_ERROR(plan_ring(args, rank_, size_, chunk, &plan));
  const bool gpu = is_gpu(args.recv_mem) || (!args.inplace && is_gpu(args.send_mem));
  Schedule schedule;
  if (!gpu) {
    EFACOLL_RETURN_IF_ERROR(build(args.kind, plan.ring, hier_per_node_, engine_->config_, model_,
                                  &schedule, &engine_->last_choice_));
    engine_->last_algorithm_ = schedule.algorithm;
    return run_schedule(args, schedule, plan.send_bytes, plan.recv_bytes, plan.ring.chunk_bytes);
  }

  GpuRuntime* rt = engine_->gpu_.get();
  if (rt == nullptr) return Status(Code::kUnsupported, "GPU buffers but no CUDA runtime");
  GpuRuntime::DeviceGuard guard(rt, args.device);
  // Peer to peer inside the node when every member is here and can reach the others' GPUs.
  // ipc_usable() is collective at its first call: every rank reaches it on the same call.
  const bool ipc = one_node_ && size_ > 1 && engine_->config_.ipc_chunk_bytes > 0;
  LlCall ll_call;
  const bool ll = ipc && ipc_ll_plan(args, &ll_call) && ipc_usable(args.device) && ipc_->ll_usable;
  if (!ll && plan.send_bytes + plan.recv_bytes <= engine_->config_.gpu_host_path_max) {
    return run_gpu_via_host(args, plan.ring, plan.send_bytes, plan.recv_bytes, plan.result_bytes);
  }
  // Host buffers in a GPU call are replaced by device copies (in and out).
  CollArgs a = args;
  DeviceTemp send_tmp(rt, args.device), recv_tmp(rt, args.device);
  if (!args.inplace && !is_gpu(args.send_mem)) {
    EFACOLL_RETURN_IF_ERROR(send_tmp.make(plan.send_bytes, args.sendbuf));
    a.sendbuf = send_tmp.get();
    a.send_mem = MemKind::kDevice;
    a.send_buffer_id = 0;
  }
  const bool host_recv = !is_gpu(args.recv_mem);
  if (host_recv) {
    // In place, the input is in the receive buffer.
    EFACOLL_RETURN_IF_ERROR(recv_tmp.make(plan.recv_bytes, args.inplace ? args.recvbuf : nullptr));
    a.recvbuf = recv_tmp.get();
    a.recv_mem = MemKind::kDevice;
    a.recv_buffer_id = 0;
  }
  Status st;
  if (ll) {
    st = run_ipc_ll(a, ll_call);
  } else if (ipc && ipc_usable(args.device)) {
    st = ipc_direct_possible(a) ? run_ipc_direct(a, plan.ring) : run_ipc(a, plan.ring);
  } else if (hier_per_node_ > 0 && engine_->config_.hier_ipc && hier_gpu_fits(a) &&
             hier_gpu_usable(args.device)) {
    st = run_hier_gpu(a);
  } else {
    EFACOLL_RETURN_IF_ERROR(build(a.kind, plan.ring, hier_per_node_, engine_->config_, model_,
                                  &schedule, &engine_->last_choice_));
    engine_->last_algorithm_ = schedule.algorithm;
    st = run_schedule(a, schedule, plan.send_bytes, plan.recv_bytes, plan.ring.chunk_bytes);
  }
  if (st.is_ok() && host_recv) st = rt->copy(args.recvbuf, recv_tmp.get(), plan.result_bytes);
  return st;
}

// Copies in (synchronously, after the caller's work on the legacy default stream), runs the
// host schedule on pinned copies, copies the result back.
Status Comm::run_gpu_via_host(const CollArgs& args, RingArgs& ring, size_t send_bytes,
                              size_t recv_bytes, size_t result_bytes) {
  GpuRuntime* rt = engine_->gpu_.get();
  const size_t need = send_bytes + recv_bytes;
  if (pinned_bytes_ < need) {
    if (pinned_) rt->free_pinned(pinned_);
    pinned_ = nullptr;
    pinned_bytes_ = 0;
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
  EFACOLL_RETURN_IF_ERROR(build(args.kind, ring, hier_per_node_, engine_->config_, model_,
                                &schedule, &engine_->last_choice_));
  engine_->last_algorithm_ = schedule.algorithm;
  EFACOLL_RETURN_IF_ERROR(run_schedule(h, schedule, send_bytes, recv_bytes, ring.chunk_bytes));
  return result_bytes ? rt->copy(args.recvbuf, host_recv, result_bytes) : Status::ok();
}

}  // namespace efacoll

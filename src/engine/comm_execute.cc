// Running one built schedule: local work on the host or the GPU's streams, GPU data staged
// through pinned host slots where the provider has no FI_HMEM, registrations where asked.
#include <algorithm>
#include <unordered_set>
#include <utility>

#include "common/log.h"
#include "core/call_signature.h"
#include "core/executor.h"
#include "core/late_sends.h"
#include "core/staging.h"
#include "engine/comm_core.h"
#include "engine/engine_core.h"
#include "engine/growing_device_buffer.h"
#include "engine/stage_pool.h"
#include "gpu/gpu_runtime.h"
#include "transport/mr_cache.h"
#include "transport/transport.h"

namespace efacoll {

namespace {

// What a GPU call holds of the engine's shared resources, given back when it ends: under
// MPI_THREAD_MULTIPLE other calls run meanwhile, each with its own.
class CallResources {
 public:
  CallResources(GpuRuntime* gpu, int device, StagePool* stages)
      : gpu_(gpu), device_(device), stages_(stages) {}
  ~CallResources() {
    if (ops_) gpu_->release_local_ops(device_, ops_);
    if (stage_) stages_->release(stage_);
  }
  Status take_local_ops(LocalOps** out) {
    EFACOLL_RETURN_IF_ERROR(gpu_->acquire_local_ops(device_, &ops_));
    *out = ops_;
    return Status::ok();
  }
  Status take_stage(size_t bytes, std::unique_lock<std::mutex>* lend) {
    return stages_->acquire(bytes, &stage_, lend);
  }
  StageSet* stage() const { return stage_; }
  // Late writes may still reach the stage: it leaves the pool instead of going back.
  StageSet* give_up_stage() { return std::exchange(stage_, nullptr); }

 private:
  GpuRuntime* gpu_;
  int device_;
  StagePool* stages_;
  LocalOps* ops_ = nullptr;
  StageSet* stage_ = nullptr;
};

constexpr size_t kUnregistrableKept = 1024;  // allocation ids remembered; then forgotten at once

// Whether the provider takes this call's GPU buffers themselves, else they are staged through
// pinned host memory: only with FI_HMEM, never managed memory (GPUDirect RDMA cannot reach it),
// and not an allocation the provider refused to register (VMM memory on some libfabric
// versions), remembered by its CUDA buffer id. Where it does, the buffers' registrations are
// the call's from here on (`held`, bufs->recv_mr and send_mr); where it does not, `held` holds
// nothing. Staging is each rank's own choice: the messages on the wire are the same.
bool provider_takes_gpu_buffers(const TransportInfo& ti, const CollArgs& args, MrCache* mrs,
                                std::unordered_set<uint64_t>* refused, size_t send_bytes,
                                size_t recv_bytes, MrCache::Call* held, ExecBuffers* bufs) {
  if (!ti.hmem || mrs == nullptr) return false;
  if (args.recv_mem == MemKind::kManaged || (!args.inplace && args.send_mem == MemKind::kManaged))
    return false;
  // Registers one buffer into the call; false, holding nothing, where it cannot be.
  auto take = [&](const void* ptr, size_t bytes, uint64_t id, const MemRegion** region) {
    if (id == 0 || refused->count(id) == 0) {
      const Status st = mrs->acquire(held, ptr, bytes, id, MemKind::kDevice, args.device, region);
      if (st.is_ok()) return true;
      EFACOLL_INFO(kNet,
                   "GPU buffer %p (allocation %llu) cannot be registered with %s: %s; its "
                   "calls are staged through host memory",
                   ptr, static_cast<unsigned long long>(id), ti.provider.c_str(),
                   st.message().c_str());
      if (id != 0) {
        if (refused->size() >= kUnregistrableKept) refused->clear();
        refused->insert(id);
      }
    }
    mrs->end_call(held);
    bufs->recv_mr = bufs->send_mr = nullptr;
    return false;
  };
  return take(args.recvbuf, recv_bytes, args.recv_buffer_id, &bufs->recv_mr) &&
         (args.inplace || take(args.sendbuf, send_bytes, args.send_buffer_id, &bufs->send_mr));
}

}  // namespace

Status CommCore::run_schedule(const CollArgs& args, Schedule& schedule, size_t send_bytes,
                              size_t recv_bytes, size_t chunk_bytes) {
  const bool gpu = is_gpu(args.recv_mem);
  const int device = args.device;
  Transport* t = engine_->transport();
  HostLocalOps host_ops;
  LocalOps* local = &host_ops;
  CallResources held_gpu(engine_->gpu(), device, engine_->stages());
  if (gpu) EFACOLL_RETURN_IF_ERROR(held_gpu.take_local_ops(&local));
  engine_->release_retired_memory();
  EFACOLL_RETURN_IF_ERROR(ensure_scratch(schedule.scratch_bytes, gpu, device));

  ExecBuffers bufs;
  bufs.send = args.inplace ? args.recvbuf : args.sendbuf;
  bufs.recv = args.recvbuf;
  bufs.scratch = gpu ? gpu_scratch_->ptr : scratch_.data();
  bufs.send_on_gpu = bufs.recv_on_gpu = bufs.scratch_on_gpu = gpu;
  MrCache* mrs = engine_->mr_cache();
  MrCache::Call held;
  const bool staged =
      gpu && !provider_takes_gpu_buffers(t->info(), args, mrs, engine_->unregistrable_gpu_buffers(),
                                         send_bytes, recv_bytes, &held, &bufs);
  if (staged) {
    StagePlan plan;
    plan.slot_bytes = std::max<size_t>(1, largest_message(schedule));
    plan.send_slots = plan.recv_slots = std::max(1, engine_->config().stage_slots);
    schedule = stage_network_ops(schedule, GpuBuffers{true, true, true}, plan);
    EFACOLL_RETURN_IF_ERROR(held_gpu.take_stage(plan.total_bytes(), lendable_lock()));
    bufs.stage = held_gpu.stage()->ptr;
  }

  // Register what the network touches: the stage when staged, otherwise the buffers themselves
  // (GPU buffers the provider takes are held already: provider_takes_gpu_buffers).
  if (mrs) {
    const MemKind kind = gpu ? MemKind::kDevice : MemKind::kHost;
    Status st;
    if (staged) {
      const StageSet* stage = held_gpu.stage();
      st = mrs->acquire(&held, bufs.stage, stage->bytes, stage->id, MemKind::kPinnedHost, -1,
                        &bufs.stage_mr);
    } else {
      // Our scratch is one allocation. User host memory cannot be identified across calls
      // (identity 0): registered for this call only.
      const size_t scratch_size = gpu ? gpu_scratch_->bytes : scratch_.size();
      st = mrs->acquire(&held, bufs.scratch, scratch_size, scratch_id_, kind, device,
                        &bufs.scratch_mr);
      if (st.is_ok() && !gpu)
        st = mrs->acquire(&held, bufs.recv, recv_bytes, 0, kind, device, &bufs.recv_mr);
      if (st.is_ok() && !gpu && !args.inplace)
        st = mrs->acquire(&held, bufs.send, send_bytes, 0, kind, device, &bufs.send_mr);
      if (args.inplace) bufs.send_mr = bufs.recv_mr;
    }
    if (!st.is_ok()) {
      mrs->end_call(&held);
      return st;
    }
  }

  ExecContext ctx;
  ctx.transport = t;
  ctx.local = local;
  ctx.peers = &peers_;
  ctx.rank = rank_;
  ctx.comm_id = id_;
  if (!failed_seqs_.empty()) drop_stale_messages();
  ctx.seq = seq_++;
  ctx.dtype = args.dtype;
  ctx.op = args.op;
  size_t count = args.count;  // reduce-scatter: the whole input
  if (args.kind == CollKind::kReduceScatter) {
    count = 0;
    for (int r = 0; r < size_; ++r) count += args.recvcounts[r];
  }
  ctx.signature = given_signature(args.abandoned, args.kind, args.dtype, args.op, count);
  ctx.count = count;
  ctx.timeout = engine_->config().timeout;
  ctx.max_posted = engine_->transport()->info().max_posted;
  ctx.yield_lock = lendable_lock();
  ctx.late_sends = engine_->late_sends();
  engine_->late_sends()->retry();
  ctx.on_stall = std::move(stall_check_);
  stall_check_ = nullptr;
  ctx.what = std::string(coll_name(args.kind)) + " on communicator " + std::to_string(id_) +
             " (call " + std::to_string(ctx.seq) + ", rank " + std::to_string(rank_) + " of " +
             std::to_string(size_) + ")";
  engine_->note_call_started(args.kind, id_, ctx.seq);
  EFACOLL_TRACE(kColl, "%s: %s, %s%s, %zu ops, chunk %zu B", ctx.what.c_str(), schedule.algorithm,
                gpu ? "GPU " : "host ", staged ? "staged" : "direct", schedule.ops.size(),
                chunk_bytes);
  unsigned late_write_targets = 0;
  ctx.late_write_targets = &late_write_targets;
  GpuRuntime* runtime = engine_->gpu();
  const EngineConfig::GdrFlush flush = engine_->config().gdr_flush;
  if (gpu && !staged && flush != EngineConfig::GdrFlush::kOff &&
      (flush == EngineConfig::GdrFlush::kOn || runtime->network_writes_need_flush(device))) {
    ctx.flush_network_writes = [runtime, device] { return runtime->flush_network_writes(device); };
  }
  Status result = execute_schedule(schedule, ctx, bufs);
  if (!result.is_ok()) remember_failed_call(ctx.seq);
  // The result must be visible to any later work on any stream before we return.
  Status done = local->finish();
  if (result.is_ok()) result = done;
  // A failed call's receives may still be posted, or written late: its registrations stay open.
  const bool still_in_use = late_write_targets != 0 || (!result.is_ok() && t->holds_operations());
  if (mrs) mrs->end_call(&held, still_in_use);
  if (late_write_targets != 0) {
    const bool stage_named = (late_write_targets >> static_cast<unsigned>(BufId::kStage)) & 1u;
    retire_late_write_targets(late_write_targets, args, ctx.what,
                              staged && stage_named ? held_gpu.give_up_stage() : nullptr);
  }
  return result;
}

}  // namespace efacoll

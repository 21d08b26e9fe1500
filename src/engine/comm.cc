#include <algorithm>

#include "coll/builders.h"
#include "common/log.h"
#include "core/executor.h"
#include "efacoll/engine.h"
#include "transport/mr_cache.h"
#include "transport/transport.h"

namespace efacoll {

Comm::Comm(Engine* engine, int rank, int size, uint32_t id)
    : engine_(engine), rank_(rank), size_(size), id_(id) {}

Comm::~Comm() {
  if (engine_->mr_cache_) engine_->mr_cache_->forget(scratch_id_);
  engine_->comm_ids_in_use_[id_] = false;
}

Status Comm::ensure_scratch(size_t bytes) {
  if (scratch_.size() >= bytes) return Status::ok();
  if (engine_->mr_cache_) engine_->mr_cache_->forget(scratch_id_);
  scratch_.assign(std::max(bytes, scratch_.size() * 2), 0);
  scratch_id_ = engine_->next_allocation_id_++;
  return Status::ok();
}

Status Comm::run(const CollArgs& args) {
  const size_t esize = dtype_size(args.dtype);
  if (esize == 0) return Status(Code::kUnsupported, "unknown datatype");
  if (args.kind != CollKind::kAllgather && !op_allowed(args.dtype, args.op)) {
    return Status(Code::kUnsupported,
                  std::string(op_name(args.op)) + " is not defined on " + dtype_name(args.dtype));
  }

  RingArgs ring;
  ring.rank = rank_;
  ring.nranks = size_;
  ring.elem_size = esize;
  ring.inplace = args.inplace;
  ring.chunk_bytes =
      std::min(engine_->config_.chunk_bytes, engine_->transport_->info().max_msg_size);
  size_t send_bytes = 0, recv_bytes = 0;
  switch (args.kind) {
    case CollKind::kAllreduce:
      ring.block_counts = even_blocks(args.count, size_);
      send_bytes = recv_bytes = args.count * esize;
      break;
    case CollKind::kAllgather:
      ring.block_counts.assign(size_, args.count);
      send_bytes = args.count * esize;
      recv_bytes = send_bytes * size_;
      break;
    case CollKind::kReduceScatter:
      if (args.recvcounts == nullptr) return Status(Code::kInvalid, "recvcounts missing");
      ring.block_counts.assign(args.recvcounts, args.recvcounts + size_);
      for (size_t c : ring.block_counts) send_bytes += c * esize;
      recv_bytes = args.inplace ? send_bytes : args.recvcounts[rank_] * esize;
      break;
    default:
      return Status(Code::kUnsupported, "unknown collective");
  }

  Schedule schedule;
  Status built;
  // More chunks than a tag can number: grow the chunk until they fit.
  for (;;) {
    built = args.kind == CollKind::kAllreduce   ? build_ring_allreduce(ring, &schedule)
            : args.kind == CollKind::kAllgather ? build_ring_allgather(ring, &schedule)
                                                : build_ring_reduce_scatter(ring, &schedule);
    if (built.code() != Code::kInvalid || ring.chunk_bytes >= (size_t(1) << 40)) break;
    ring.chunk_bytes *= 2;
  }
  EFACOLL_RETURN_IF_ERROR(built);
  EFACOLL_RETURN_IF_ERROR(ensure_scratch(schedule.scratch_bytes));

  Transport* t = engine_->transport_.get();
  ExecBuffers bufs;
  bufs.send = args.inplace ? args.recvbuf : args.sendbuf;
  bufs.recv = args.recvbuf;
  bufs.scratch = scratch_.data();
  MrCache* mrs = engine_->mr_cache_.get();
  if (mrs) {
    // All of scratch, so one registration serves every call that fits in it. User host memory
    // cannot be identified across calls (identity 0): registered for this call only.
    Status st = mrs->acquire(scratch_.data(), scratch_.size(), scratch_id_, &bufs.scratch_desc);
    if (st.is_ok()) st = mrs->acquire(bufs.recv, recv_bytes, 0, &bufs.recv_desc);
    if (st.is_ok() && !args.inplace) st = mrs->acquire(bufs.send, send_bytes, 0, &bufs.send_desc);
    if (args.inplace) bufs.send_desc = bufs.recv_desc;
    if (!st.is_ok()) {
      mrs->end_call();
      return st;
    }
  }

  ExecContext ctx;
  ctx.transport = t;
  ctx.peers = &peers_;
  ctx.rank = rank_;
  ctx.comm_id = id_;
  ctx.seq = seq_++;
  ctx.dtype = args.dtype;
  ctx.op = args.op;
  ctx.timeout = engine_->config_.timeout;
  ctx.what = std::string(coll_name(args.kind)) + " on communicator " + std::to_string(id_) +
             " (call " + std::to_string(ctx.seq) + ", rank " + std::to_string(rank_) + " of " +
             std::to_string(size_) + ")";
  EFACOLL_TRACE(kColl, "%s: ring, %zu ops, chunk %zu B", ctx.what.c_str(), schedule.ops.size(),
                ring.chunk_bytes);
  Status result = execute_schedule(schedule, ctx, bufs);
  if (mrs) mrs->end_call();
  return result;
}

}  // namespace efacoll

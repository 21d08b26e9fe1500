#include "engine/ring_plan.h"

#include <algorithm>
#include <string>

namespace efacoll {

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

size_t most_bytes_of_a_rank(CollKind kind, const RingArgs& ring) {
  size_t block = 0;
  for (size_t c : ring.block_counts) block = std::max(block, c * ring.elem_size);
  const size_t whole = call_bytes(ring);
  return kind == CollKind::kAllreduce ? 2 * whole : whole + block;
}

AlgoInputs algo_inputs(CollKind kind, const RingArgs& ring, int hier_per_node,
                       const EngineConfig& config) {
  AlgoInputs in;
  in.kind = kind;
  in.bytes = call_bytes(ring);
  in.nranks = ring.nranks;
  in.ranks_per_node = hier_per_node;
  in.small_bytes = config.rd_max_bytes;
  in.chunk_bytes = ring.chunk_bytes;
  in.chunk_forced = config.chunk_forced;
  in.max_chunk_bytes = config.max_chunk_bytes;
  in.channels = config.channels;
  in.max_channels = config.max_channels;
  in.inplace = ring.inplace;
  return in;
}

}  // namespace efacoll

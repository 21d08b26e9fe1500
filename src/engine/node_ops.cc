#include "engine/node_ops.h"

#include "gpu/gpu_runtime.h"

namespace efacoll {

NodeCall node_call(const CollArgs& args, const RingArgs& ring) {
  NodeCall c;
  c.kind = args.kind;
  c.rank = ring.rank;
  c.nranks = ring.nranks;
  c.elem_size = dtype_size(args.dtype);
  c.count = args.count;
  c.blocks = ring.block_counts;
  c.inplace = args.inplace;
  return c;
}

Status run_node_ops(GpuRuntime* gpu, const std::vector<NodeOp>& ops, const NodeAddress& address,
                    DType dtype, ROp rop) {
  const size_t esize = dtype_size(dtype);
  for (const NodeOp& op : ops) {
    uint8_t* dst = address(op.dst);
    std::vector<const uint8_t*> srcs;
    for (const NodeRef& r : op.srcs) srcs.push_back(address(r));
    for (const uint8_t* p : srcs)
      if (p == nullptr) dst = nullptr;
    if (dst == nullptr || srcs.empty())
      return Status(Code::kInternal, "a node schedule names memory not mapped here");
    if (op.kind == NodeOp::Kind::kCopy || srcs.size() == 1) {
      if (dst != srcs[0]) EFACOLL_RETURN_IF_ERROR(gpu->copy(dst, srcs[0], op.bytes));
      continue;
    }
    const size_t count = op.bytes / esize;
    EFACOLL_RETURN_IF_ERROR(gpu->reduce(dst, srcs[0], srcs[1], count, dtype, rop));
    for (size_t k = 2; k < srcs.size(); ++k)
      EFACOLL_RETURN_IF_ERROR(gpu->reduce(dst, dst, srcs[k], count, dtype, rop));
  }
  return Status::ok();
}

}  // namespace efacoll

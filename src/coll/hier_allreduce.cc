// Hierarchical allreduce for nodes of equal size L: the vector is cut into L slices;
//   1. ring reduce-scatter inside the node: local rank l holds slice l summed over the node;
//   2. ring allreduce of slice l across the nodes, among the ranks with local index l;
//   3. ring allgather inside the node: everyone holds the whole vector.
// Each phase is an ordinary ring schedule on its sub-group, renumbered into this communicator
// (peers, buffer offsets, message ids) and ordered after the previous phase.
#include "coll/hier_allreduce.h"

#include <algorithm>

namespace efacoll {
namespace {

// Message ids: a quarter of the id space per phase.
constexpr uint32_t kPhaseIds = (kMaxMsgId + 1) / 4;

// Appends `part` (a schedule on sub-group ranks) after everything already in `out`. Its receive
// buffer starts recv_shift bytes into ours; with send_is_recv its send buffer is ours too,
// send_shift bytes in.
Status append_phase(const Schedule& part, const std::vector<int>& group, uint32_t msg_base,
                    size_t recv_shift, bool send_is_recv, size_t send_shift, Schedule* out) {
  const uint32_t first = static_cast<uint32_t>(out->ops.size());
  std::vector<uint32_t> before;  // ops of earlier phases nobody waits on yet
  for (uint32_t i = 0; i < first; ++i) {
    if (out->successors[i].empty()) before.push_back(i);
  }
  for (size_t i = 0; i < part.ops.size(); ++i) {
    Op op = part.ops[i];
    if (op.peer >= 0) op.peer = group[op.peer];
    if (op.msg_id >= kPhaseIds)
      return Status(Code::kInvalid, "too many chunks: raise the chunk size");
    op.msg_id += msg_base;
    for (BufRef* ref : {&op.dst, &op.src, &op.src2}) {
      if (ref->buf == BufId::kRecv) {
        ref->offset += recv_shift;
      } else if (ref->buf == BufId::kSend && send_is_recv) {
        ref->buf = BufId::kRecv;
        ref->offset += send_shift;
      }
    }
    const uint32_t id = out->add(op);
    if (part.num_deps[i] == 0) {
      for (uint32_t b : before) out->depend(b, id);
    }
  }
  for (size_t i = 0; i < part.ops.size(); ++i) {
    for (uint32_t next : part.successors[i]) out->depend(first + i, first + next);
  }
  out->scratch_bytes = std::max(out->scratch_bytes, part.scratch_bytes);
  return Status::ok();
}

}  // namespace

Status build_hier_allreduce(const HierArgs& args, Schedule* out) {
  *out = Schedule();
  const int L = args.ranks_per_node, N = args.nranks / L;
  if (L <= 0 || N * L != args.nranks) return Status(Code::kInvalid, "nodes of unequal size");
  const int node = args.rank / L, local = args.rank % L;
  std::vector<int> node_group(L), slice_group(N);
  for (int l = 0; l < L; ++l) node_group[l] = node * L + l;
  for (int n = 0; n < N; ++n) slice_group[n] = n * L + local;
  const std::vector<size_t> slices = even_blocks(args.count, L);
  size_t slice_offset = 0;
  for (int l = 0; l < local; ++l) slice_offset += slices[l] * args.elem_size;
  RingArgs rs;
  rs.rank = local;
  rs.nranks = L;
  rs.elem_size = args.elem_size;
  rs.block_counts = slices;
  rs.inplace = args.inplace;
  rs.chunk_bytes = args.chunk_bytes;
  Schedule part;
  EFACOLL_RETURN_IF_ERROR(build_ring_reduce_scatter(rs, &part));
  // Its result goes to the slice's place in recv; in place, its input is all of recv.
  EFACOLL_RETURN_IF_ERROR(append_phase(part, node_group, 0, slice_offset, args.inplace, 0, out));

  RingArgs ar;
  ar.rank = node;
  ar.nranks = N;
  ar.elem_size = args.elem_size;
  ar.block_counts = even_blocks(slices[local], N);
  ar.inplace = true;  // the node's partial sum is already in place
  ar.chunk_bytes = args.chunk_bytes;
  EFACOLL_RETURN_IF_ERROR(build_ring_allreduce(ar, &part));
  EFACOLL_RETURN_IF_ERROR(
      append_phase(part, slice_group, kPhaseIds, slice_offset, true, slice_offset, out));

  RingArgs ag;
  ag.rank = local;
  ag.nranks = L;
  ag.elem_size = args.elem_size;
  ag.block_counts = slices;
  ag.inplace = true;
  ag.chunk_bytes = args.chunk_bytes;
  EFACOLL_RETURN_IF_ERROR(build_ring_allgather(ag, &part));
  return append_phase(part, node_group, 2 * kPhaseIds, 0, true, 0, out);
}

}  // namespace efacoll

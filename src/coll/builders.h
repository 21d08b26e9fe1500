// One builder per algorithm. Each returns kInvalid when the arguments cannot be scheduled
// (for example more pipelined messages than a tag can number).
#pragma once
#include "coll/ring_layout.h"
#include "core/schedule.h"
#include "efacoll/status.h"

namespace efacoll {

// recv[i] = reduce over ranks of send[i]; blocks: any split of the vector (usually even_blocks).
Status build_ring_allreduce(const RingArgs& args, Schedule* out);
// The same result for small vectors in log2(P) exchanges (block_counts: any split; only the sum
// matters).
Status build_rd_allreduce(const RingArgs& args, Schedule* out);
// The same result in two pipelined binary trees (small and medium vectors at scale).
Status build_tree_allreduce(const RingArgs& args, Schedule* out);
// recv[block r] holds every rank's send; block_counts all equal to the per-rank count.
Status build_ring_allgather(const RingArgs& args, Schedule* out);
// The same result in log2(P) exchanges (small blocks).
Status build_rd_allgather(const RingArgs& args, Schedule* out);
// recv[0 .. block_counts[rank]) = reduce over ranks of send[block rank].
Status build_ring_reduce_scatter(const RingArgs& args, Schedule* out);
// The same result in log2(P) halving exchanges (small vectors).
Status build_rh_reduce_scatter(const RingArgs& args, Schedule* out);

}  // namespace efacoll

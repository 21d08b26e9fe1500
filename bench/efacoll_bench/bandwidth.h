// nccl-tests' size and bandwidth arithmetic (doc/PERFORMANCE.md in nccl-tests), so that numbers
// from efacoll-bench and from nccl-tests mean the same thing:
//   size S   allreduce: the vector every rank reduces; allgather: the whole gathered vector
//            (nranks blocks); reduce_scatter: the whole vector every rank sends (nranks blocks)
//   algbw    S / time
//   busbw    algbw * 2(n-1)/n for allreduce, algbw * (n-1)/n for allgather and reduce_scatter:
//            what each rank's link carries, comparable with the hardware's peak.
#ifndef EFACOLL_BENCH_BANDWIDTH_H
#define EFACOLL_BENCH_BANDWIDTH_H

#include <cstddef>
#include <vector>

#include "bench_types.h"

namespace efacoll_bench {

// How many per-rank counts make up S: 1 for allreduce, nranks for the others.
size_t blocks_in_size(Collective c, int nranks);

// The count argument each rank passes for a requested size (rounded down; 0: too small to run).
size_t count_per_rank(Collective c, int nranks, DataType t, size_t size_bytes);

// S for a per-rank count: the size actually measured after rounding down.
size_t measured_bytes(Collective c, int nranks, DataType t, size_t count);

struct SizeStep {
  size_t bytes;           // S as measured
  size_t count_per_rank;  // the call's count argument
};

// The sizes of a sweep: min, min*factor, ... up to max, each rounded down to whole elements per
// rank; sizes too small for one element per rank are left out.
std::vector<SizeStep> size_steps(Collective c, int nranks, DataType t, size_t min_bytes,
                                 size_t max_bytes, size_t factor);

double bus_factor(Collective c, int nranks);

// GB/s as nccl-tests prints them (1 GB = 1e9 bytes). 0 for a non-positive time.
double algbw_gbps(size_t size_bytes, double seconds);
double busbw_gbps(Collective c, int nranks, size_t size_bytes, double seconds);

}  // namespace efacoll_bench

#endif

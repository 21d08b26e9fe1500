// Algorithms a collective can run with, and one forced choice per collective (EFACOLL_ALGO).
#pragma once
#include "efacoll/types.h"

namespace efacoll {

// kRecursive: recursive doubling (allreduce, allgather) or halving (reduce-scatter).
enum class Algo : unsigned char { kAuto, kRing, kTree, kRecursive, kHier };

// One forced algorithm per collective (kAuto: the library picks).
struct AlgoOverrides {
  Algo allreduce = Algo::kAuto, allgather = Algo::kAuto, reduce_scatter = Algo::kAuto;
  Algo for_kind(CollKind kind) const;
};

}  // namespace efacoll

// Algorithms a collective can run with, and one forced choice per collective (EFACOLL_ALGO).
#pragma once
#include <string>

#include "efacoll/types.h"

namespace efacoll {

// kRecursive: recursive doubling (allreduce, allgather) or halving (reduce-scatter).
enum class Algo : unsigned char { kAuto, kRing, kTree, kRecursive, kHier };

// One forced algorithm per collective (kAuto: the library picks).
struct AlgoOverrides {
  Algo allreduce = Algo::kAuto, allgather = Algo::kAuto, reduce_scatter = Algo::kAuto;
  Algo for_kind(CollKind kind) const;
};

// The tuner's pick for one call.
struct TunedChoice {
  Algo algo = Algo::kRing;
  double predicted_us = 0;
  std::string explanation;  // "allreduce 4096 B on 4 ranks: rd 42.0 us < tree 60.1 us < ..."
};

// The tuner's cost model (src/tune/cost_model.h): NCCL's tuning tables in spirit.
struct LinkCost {
  double alpha_us = 10;  // one step: a message's latency
  double gbps = 10;      // bandwidth one rank sees, GB/s (= bytes per ns)
};

struct CostModel {
  LinkCost intra;               // between ranks of one node (shared memory, NVLink)
  LinkCost inter;               // between nodes (the fabric, this rank's NICs)
  double per_message_us = 1.0;  // posting and completing one message
  double reduce_gbps = 5;       // local reduction
  std::string source = "defaults";
};

}  // namespace efacoll

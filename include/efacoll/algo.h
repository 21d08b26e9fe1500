// Algorithms a collective can run with, and one forced choice per collective (EFACOLL_ALGO).
#pragma once
#include <string>
#include <vector>

#include "efacoll/types.h"

namespace efacoll {

// kRecursive: recursive doubling (allreduce, allgather) or halving (reduce-scatter).
// kLl, kIpc: GPU buffers inside one node, over CUDA IPC: the low-latency protocol (one kernel
// pushes into the peers' memory) or IPC direct (the peers' buffers read in place).
enum class Algo : unsigned char { kAuto, kRing, kTree, kRecursive, kHier, kLl, kIpc };

// One forced algorithm per collective (kAuto: the library picks).
struct AlgoOverrides {
  Algo allreduce = Algo::kAuto, allgather = Algo::kAuto, reduce_scatter = Algo::kAuto;
  Algo for_kind(CollKind kind) const;
  Algo& for_kind(CollKind kind);
};

// The tuner's pick for one call.
struct TunedChoice {
  Algo algo = Algo::kRing;
  size_t chunk_bytes = 0;  // 0: the configured chunk
  int channels = 1;
  double predicted_us = 0;
  bool on_trial = false;  // one of several candidates the call shape's first calls measure
  // "allreduce 4096 B on 4 ranks: recursive doubling 42.0 us (512 KiB x 1) < ..."
  std::string explanation;
};

// The tuner's cost model (src/tune/cost_model.h): NCCL's tuning tables in spirit.
struct LinkCost {
  double alpha_us = 10;  // one step: a message's latency (messages up to 4 KiB)
  double gbps = 10;      // bandwidth one rank sees, GB/s (= bytes per ns), calls up to 1 MiB
  // The same for calls of 16 MiB and more, whose data no longer stays in caches (host copies);
  // geometric in between. 0: gbps at every size.
  double large_gbps = 0;
  // alpha_us for messages of 16 KiB and more, which leave the providers' eager paths
  // (geometric in between; 0: alpha_us at every size).
  double alpha_large_us = 0;
};

// A calibration point: how much longer (factor > 1) or shorter an algorithm took than the
// model predicted, measured at one size.
struct AlgoCorrection {
  CollKind kind = CollKind::kAllreduce;
  Algo algo = Algo::kRing;
  double bytes = 0;
  double factor = 1;
  bool holds_below = false;  // a latency-bound first point: its factor also covers smaller calls
};

struct CostModel {
  LinkCost intra;                // between ranks of one node (shared memory, NVLink)
  LinkCost inter;                // between nodes (the fabric, this rank's NICs)
  double per_message_us = 1.0;   // posting and completing one message of 16 KiB or more
  double small_message_us = 0;   // the same for messages up to 4 KiB (0: per_message_us)
  double reduce_gbps = 5;        // local reduction
  double reduce_large_gbps = 0;  // the same for calls of 16 MiB and more (0: reduce_gbps)
  // GPU calls inside one node (measured on 2x H200, NV18): alpha is a call's fixed cost (launch,
  // flags, host wait); bandwidth is per byte one rank pushes (ll) or reads from peers (ipc).
  LinkCost gpu_ll = {15.0, 190.0};
  LinkCost gpu_ipc = {25.0, 330.0};
  // Measured against predicted per algorithm (EFACOLL_TUNE=calibrate), applied between the
  // measured sizes, fading to none two octaves beyond them, held below a latency-bound first one.
  std::vector<AlgoCorrection> corrections;
  std::string source = "defaults";
};

}  // namespace efacoll

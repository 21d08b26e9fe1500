// The cost model the tuner chooses with (NCCL's tuning tables in spirit): per link class a
// latency per step and a bandwidth, plus the CPU cost of one message and the local reduction
// rate. Each algorithm's time is predicted from its step count and the bytes it moves per rank.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "coll/tree_shape.h"  // tree_chunk_bytes: predictions pipeline as the builder does
#include "efacoll/algo.h"
#include "efacoll/status.h"
#include "efacoll/types.h"

namespace efacoll {

// Parameters for a known platform: "p4d", "p5" (EFA per GPU, NVSwitch inside), or "local" (a
// host with shared memory and TCP, the test machines). kInvalid for anything else.
Status platform_model(const std::string& platform, CostModel* out);
// "key = value" lines (intra_alpha_us, intra_alpha_large_us, intra_gbps, intra_large_gbps,
// inter_alpha_us, inter_alpha_large_us, inter_gbps, inter_large_gbps, per_message_us,
// small_message_us, reduce_gbps, reduce_large_gbps,
// gpu_ll_alpha_us, gpu_ll_gbps, gpu_ipc_alpha_us, gpu_ipc_gbps); # starts a comment. Missing
// keys keep `out`'s values.
Status parse_model(const std::string& text, CostModel* out);

// A model file: local defaults, then the file's keys; its source names the path.
Status load_model_file(const std::string& path, CostModel* out);

struct CostInputs {
  CollKind kind = CollKind::kAllreduce;
  size_t bytes = 0;  // allreduce: the vector; allgather: the result; reduce-scatter: input
  int nranks = 1;
  int ranks_per_node = 0;  // 0: one node; else nodes of this many consecutive ranks
  size_t chunk_bytes = 1 << 19;
  int channels = 1;  // independent schedules, each on 1/channels of the data
};

// A bandwidth for a call of this many bytes: gbps up to 1 MiB, large_gbps from 16 MiB (when
// set), geometric in between.
double rate_at(double gbps, double large_gbps, double call_bytes);

// The calibrated factor for an algorithm at a size (1 without calibration points): geometric
// between points, fading to 1 two octaves past the last, and below the first unless that one
// holds_below (a latency-bound call's time does not change with its size).
double correction(const CostModel& m, CollKind kind, Algo algo, double bytes);

// Each calibration factor replaced by the median of itself and its neighbours in size (same
// collective and algorithm). Ranks sharing cores put a lone point off by up to 2x; a step
// between sizes (tcp's eager limit) survives a median. The smallest point takes the median of
// itself and the next two, since it may hold for every smaller call; the largest keeps its own
// (it fades, and 1-2 MiB is where the chunked ring's step shows).
void smooth_corrections(std::vector<AlgoCorrection>* points);

// The steps of a flat algorithm on p ranks that each wait for a peer, one after the other:
// ring 2(p-1) (allreduce) or p-1; tree 2 x its depth, floor(log2 p); recursive doubling or
// halving floor(log2 p) where p is a power of two. Else halving adds the fold in and out (2),
// and doubling's count comes from running its fold pattern, whose first exchanges need not all
// wait for the fold (1 or 2 more).
int latency_steps(Algo algo, CollKind kind, int p);
// The messages of a whole call (every rank's, one chunk each): ring p(p-1), twice for
// allreduce; the two trees 4(p-1); recursive q log2 q between the largest power of two q of
// ranks, plus two for each rank folded in.
int call_messages(Algo algo, CollKind kind, int p);

// Predicted microseconds of one call with this algorithm (which must apply).
// - Pipelined algorithms (ring, tree) overlap the wire and the reductions across their chunks:
//   with K chunks per block (all channels together) the slower counts whole and the other 1/K,
//   as in a pipeline of K stages. Every message costs per_message_us on top: smaller chunks
//   overlap more and post more.
// - Across nodes, a ring with channels crosses the fabric from a different rank of each node
//   per channel (channels.h), so one rank's NICs carry ceil(C/L)/C of its ring traffic.
double predict_us(const CostModel& m, Algo algo, const CostInputs& in);

// GPU buffers inside one node: kLl (the low-latency protocol) or kIpc (IPC direct).
double predict_node_us(const CostModel& m, Algo algo, const CostInputs& in);

}  // namespace efacoll

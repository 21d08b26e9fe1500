// Which algorithm runs a collective: the names users force with EFACOLL_ALGO, their grammar, and
// the rule that picks one when nothing is forced.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "efacoll/algo.h"
#include "efacoll/status.h"
#include "efacoll/types.h"

namespace efacoll {

const char* algo_name(Algo a, CollKind kind);
// "512 B", "64 KiB", "2 MiB": the largest unit that divides the size, for log lines.
std::string size_text(size_t bytes);
// Whether an algorithm exists for a collective (the tree: allreduce only; hier: several nodes;
// ll and ipc: one node).
bool algo_applies(Algo a, CollKind kind, bool multi_node);
// The algorithms that run as schedules over the fabric (not ll, ipc or auto).
bool fabric_algo(Algo a);
// Whether a call with this algorithm can be split into channels (the registry's answer).
bool algo_takes_channels(Algo a, CollKind kind, bool inplace);

// "auto", one name for every collective it applies to ("ring", "tree", "rd", "rh", "hier", "ll",
// "ipc"), or
// per collective: "allreduce:tree,allgather:rd,reduce_scatter:ring". kInvalid names what is wrong.
Status parse_algo_overrides(const std::string& text, AlgoOverrides* out);

struct AlgoInputs {
  CollKind kind = CollKind::kAllreduce;
  size_t bytes = 0;  // allreduce: the vector; allgather: the result; reduce-scatter: the input
  int nranks = 1;
  int ranks_per_node = 0;                    // >0: several nodes of this many consecutive ranks
  size_t small_bytes = 65536;                // EFACOLL_RD_MAX_BYTES (the rule without a cost model)
  size_t chunk_bytes = 1 << 19;              // EFACOLL_CHUNK_SIZE
  bool chunk_forced = false;                 // the user set it: the tuner keeps it
  size_t max_chunk_bytes = size_t(1) << 30;  // the transport's largest message
  int channels = 0;                          // EFACOLL_CHANNELS (0: the tuner picks)
  int max_channels = 8;
  bool inplace = false;  // in-place reduce-scatter runs on one channel
};

// The forced algorithm where it applies, else the rule: across nodes, hierarchical allreduce;
// small calls, the recursive algorithms (log2 P steps); the rest, the ring.
Algo choose_algo(const AlgoInputs& in, const AlgoOverrides& forced);

// The forced algorithm where it applies, else the one the cost model predicts fastest, each
// with the chunk size and channel count the model predicts fastest for it (unless forced). The
// explanation is written only when asked for (formatting it costs more than the choice).
TunedChoice tune_algo(const CostModel& model, const AlgoInputs& in, const AlgoOverrides& forced,
                      bool explain = false);

// The tuner's ranking (tie rules applied) cut to the algorithms predicted within `margin` of the
// fastest (0.25: up to 1.25x its time); the first is tune_algo's pick when nothing is forced.
// Online trials (src/tune/trials.h) measure these.
std::vector<TunedChoice> near_candidates(const CostModel& model, const AlgoInputs& in,
                                         double margin);

}  // namespace efacoll

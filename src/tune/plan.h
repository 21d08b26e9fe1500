// Which way one call runs, decided here and nowhere else. The engine gathers what it knows of the
// call (PlanFacts: where the buffers are, whether CUDA IPC works, what the model predicts inside
// the node, what was measured where ranks share a GPU) and executes the Plan this returns; the
// fabric's algorithm, chunk and channels come from the tuner through PlanQuestions, asked only
// where the path needs them.
#pragma once
#include <cstddef>
#include <cstdint>

#include "efacoll/algo.h"
#include "efacoll/types.h"

namespace efacoll {

struct SharedGpuPick;

enum class Path : uint8_t {
  kFabric,        // a schedule over the fabric on the call's buffers (host; GPU: FI_HMEM or staged)
  kHostCopies,    // GPU data copied to pinned host memory, a fabric schedule there, copied back
  kLowLatency,    // one node: one kernel pushes into the peers' memory, flags beside the data
  kIpcDirect,     // one node: the peers' buffers read in place through CUDA IPC
  kIpcRounds,     // one node: rounds through the members' mapped workspaces
  kHierarchical,  // several nodes: CUDA IPC inside each, the fabric across
};
const char* path_name(Path path);

struct PlanFacts {
  CollKind kind = CollKind::kAllreduce;
  bool gpu = false;  // the call's data lies on GPUs (on every rank, or as the ranks agreed)
  // Some ranks' data lies on the host, others' on GPUs: only the fabric, which each rank's own
  // staging adapts to, is common to all.
  bool mixed_kinds = false;
  size_t bytes = 0;  // as the tuner sizes calls (call_bytes)
  Algo forced = Algo::kAuto;
  // GPU calls. Every member is on this node and maps the others' memory through CUDA IPC, and no
  // fabric algorithm is forced.
  bool ipc = false;
  bool ll_set_up = false;   // the low-latency protocol's regions exist (every IPC call advances it)
  bool ll_fits = false;     // ...and it can carry this call
  bool ipc_direct = false;  // IPC direct can run it (else IPC rounds)
  double ll_us = 0, ipc_us = 0;  // the model's predictions inside the node
  // Ranks share a GPU and the tuner weighs IPC against the fabric by measured times (null: not).
  const SharedGpuPick* shared = nullptr;
  bool host_copies_fit = false;  // no rank moves more than EFACOLL_GPU_HOST_PATH_MAX bytes
  // Nodes of equal size, hierarchical GPU phases on, and the call's blocks fit them.
  bool hier_possible = false;
};

// Questions whose answers cost something (each may meet the other ranks): asked only where the
// path depends on them, so every rank asks the same ones at the same call.
class PlanQuestions {
 public:
  virtual ~PlanQuestions() = default;
  // The tuner's fabric algorithm, chunk and channels for this call (may start an online trial).
  virtual TunedChoice fabric_choice() = 0;
  // The hierarchical sub-communicators exist on every rank (made at the first such call).
  virtual bool hierarchical_usable() = 0;
};

struct Plan {
  Path path = Path::kFabric;
  // The fabric's choice (kFabric, kHostCopies, and a hierarchical allreduce's): its algorithm,
  // chunk and channels. Inside one node: kLl or kIpc with the model's or measured prediction.
  TunedChoice choice;
  // Where ranks share a GPU and the fabric was measured faster: its measured extra over the model.
  double fabric_extra_us = 0;
  bool advances_ll_sequence = false;  // an IPC call: takes the low-latency protocol's next sequence
  // The node's peers may be on the low-latency protocol at this sequence while this rank is not:
  // it watches for their words (the calls differ; engine/paths/ipc_path_watch.cc).
  bool watch_ll_peers = false;
  const char* why = "";  // for the TRACE line
};

Plan choose_plan(const PlanFacts& facts, PlanQuestions& questions);

}  // namespace efacoll

#include "tune/plan.h"

#include "tune/algo.h"
#include "tune/shared_gpu_paths.h"

namespace efacoll {

const char* path_name(Path path) {
  // The node algorithms' names are the tuner's (algo_name): one spelling in TRACE and the C API.
  switch (path) {
    case Path::kFabric:
      return "fabric schedule";
    case Path::kHostCopies:
      return "host copies";
    case Path::kLowLatency:
      return algo_name(Algo::kLl, CollKind::kAllreduce);
    case Path::kIpcDirect:
      return algo_name(Algo::kIpc, CollKind::kAllreduce);
    case Path::kIpcRounds:
      return "IPC rounds";
    case Path::kHierarchical:
      return "hierarchical";
  }
  return "?";
}

namespace {

// Inside one node: the low-latency protocol where it can run and is forced or predicted no
// slower than IPC; where ranks share a GPU and the tuner chooses, IPC or the fabric by their
// measured times; else IPC.
void choose_in_node(const PlanFacts& f, Plan* p, bool* ll, bool* in_node, bool* ipc_chosen) {
  p->advances_ll_sequence = f.ll_set_up;
  if (f.shared) {
    *in_node = !f.shared->fabric_faster;
    *ipc_chosen = *in_node;
    if (*in_node) {
      p->choice.algo = Algo::kIpc;
      p->choice.predicted_us = f.shared->ipc_us;
      p->why = "ranks share a GPU: IPC measured faster than the fabric";
    } else {
      p->fabric_extra_us = f.shared->fabric_extra_us;
      p->why = "ranks share a GPU: the fabric measured faster than IPC";
    }
    return;
  }
  *ll = f.ll_fits && f.forced != Algo::kIpc && (f.forced == Algo::kLl || f.ll_us <= f.ipc_us);
  p->choice.algo = *ll ? Algo::kLl : Algo::kIpc;
  p->choice.predicted_us = *ll ? f.ll_us : f.ipc_us;
  p->why = f.forced == Algo::kLl || f.forced == Algo::kIpc ? "forced"
           : *ll                                           ? "low-latency predicted no slower"
           : f.ll_fits                                     ? "IPC predicted faster"
                       : "too large for the low-latency protocol";
}

}  // namespace

Plan choose_plan(const PlanFacts& f, PlanQuestions& q) {
  Plan p;
  if (!f.gpu || f.mixed_kinds) {
    p.choice = q.fabric_choice();
    p.why = f.mixed_kinds ? "buffers on GPUs on some ranks, on the host on others: the fabric"
                          : "host buffers";
    return p;
  }
  // IPC direct even for calls the host copies would take: forced, or measured faster where
  // ranks share a GPU.
  bool ll = false, in_node = f.ipc, ipc_chosen = f.forced == Algo::kIpc;
  if (in_node) choose_in_node(f, &p, &ll, &in_node, &ipc_chosen);
  p.watch_ll_peers = in_node && f.ll_set_up && !ll;
  if (!ll && !ipc_chosen && f.host_copies_fit) {
    p.path = Path::kHostCopies;
    p.choice = q.fabric_choice();
    p.why = f.shared ? "ranks share a GPU: the fabric measured faster than IPC"
                     : "small GPU call: two copies cost less than staging every step";
    return p;
  }
  if (ll) {
    p.path = Path::kLowLatency;
    return p;
  }
  if (in_node) {
    p.path = f.ipc_direct ? Path::kIpcDirect : Path::kIpcRounds;
    return p;
  }
  // Across nodes allreduce runs hierarchically unless the tuner (or EFACOLL_ALGO) prefers a
  // flat algorithm, such as the ring whose channels cross from every GPU at large sizes;
  // allgather and reduce-scatter have no flat rival that keeps NVLink inside the node.
  bool asked = false;
  if (f.hier_possible) {
    bool hierarchical = true;
    if (f.kind == CollKind::kAllreduce) {
      p.choice = q.fabric_choice();
      asked = true;
      hierarchical = p.choice.algo == Algo::kHier;
    }
    if (hierarchical && q.hierarchical_usable()) {
      p.path = Path::kHierarchical;
      p.why = "several nodes: IPC inside each, the fabric across";
      return p;
    }
  }
  p.path = Path::kFabric;
  if (!asked) p.choice = q.fabric_choice();
  p.why = f.shared                ? "ranks share a GPU: the fabric measured faster than IPC"
          : fabric_algo(f.forced) ? "a fabric algorithm is forced"
          : asked && p.choice.algo != Algo::kHier
              ? "the tuner prefers a flat algorithm across nodes"
          : f.hier_possible ? "the hierarchical phases cannot run here"
                            : "GPU buffers without CUDA IPC between the members";
  return p;
}

}  // namespace efacoll

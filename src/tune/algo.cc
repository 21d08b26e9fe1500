#include "tune/algo.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "tune/cost_model.h"

namespace efacoll {

const char* algo_name(Algo a, CollKind kind) {
  switch (a) {
    case Algo::kAuto:
      return "auto";
    case Algo::kRing:
      return "ring";
    case Algo::kTree:
      return "double binary tree";
    case Algo::kRecursive:
      return kind == CollKind::kReduceScatter ? "recursive halving" : "recursive doubling";
    case Algo::kHier:
      return "hierarchical";
  }
  return "?";
}

bool algo_applies(Algo a, CollKind kind, bool multi_node) {
  switch (a) {
    case Algo::kTree:
      return kind == CollKind::kAllreduce;
    case Algo::kHier:
      return kind == CollKind::kAllreduce && multi_node;
    default:
      return true;
  }
}

Algo AlgoOverrides::for_kind(CollKind kind) const {
  return kind == CollKind::kAllreduce   ? allreduce
         : kind == CollKind::kAllgather ? allgather
                                        : reduce_scatter;
}

namespace {

bool parse_name(const std::string& name, Algo* out) {
  if (name == "auto")
    *out = Algo::kAuto;
  else if (name == "ring")
    *out = Algo::kRing;
  else if (name == "tree")
    *out = Algo::kTree;
  else if (name == "rd" || name == "rh")
    *out = Algo::kRecursive;
  else if (name == "hier")
    *out = Algo::kHier;
  else
    return false;
  return true;
}

}  // namespace

Status parse_algo_overrides(const std::string& text, AlgoOverrides* out) {
  AlgoOverrides o;
  const std::string bad = "EFACOLL_ALGO=" + text + ": ";
  size_t begin = 0;
  for (;;) {
    const size_t end = text.find(',', begin);
    const std::string item = text.substr(begin, end == std::string::npos ? end : end - begin);
    const size_t colon = item.find(':');
    Algo a;
    if (colon == std::string::npos) {
      if (!parse_name(item, &a)) {
        return Status(Code::kInvalid,
                      bad + "unknown algorithm '" + item + "' (auto, ring, tree, rd, rh, hier)");
      }
      // One name for all: each collective takes it where it applies.
      o.allreduce = a;
      o.allgather = algo_applies(a, CollKind::kAllgather, true) ? a : Algo::kAuto;
      o.reduce_scatter = algo_applies(a, CollKind::kReduceScatter, true) ? a : Algo::kAuto;
    } else {
      const std::string coll = item.substr(0, colon), name = item.substr(colon + 1);
      if (!parse_name(name, &a)) {
        return Status(Code::kInvalid, bad + "unknown algorithm '" + name + "'");
      }
      Algo* slot = coll == "allreduce"        ? &o.allreduce
                   : coll == "allgather"      ? &o.allgather
                   : coll == "reduce_scatter" ? &o.reduce_scatter
                                              : nullptr;
      const CollKind kind = coll == "allreduce"   ? CollKind::kAllreduce
                            : coll == "allgather" ? CollKind::kAllgather
                                                  : CollKind::kReduceScatter;
      if (slot == nullptr) {
        return Status(Code::kInvalid, bad + "unknown collective '" + coll +
                                          "' (allreduce, allgather, reduce_scatter)");
      }
      if (!algo_applies(a, kind, true)) {
        return Status(Code::kInvalid, bad + name + " does not exist for " + coll);
      }
      *slot = a;
    }
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  *out = o;
  return Status::ok();
}

Algo choose_algo(const AlgoInputs& in, const AlgoOverrides& forced) {
  const bool multi_node = in.ranks_per_node > 0;
  const Algo f = forced.for_kind(in.kind);
  if (f != Algo::kAuto && algo_applies(f, in.kind, multi_node)) return f;
  if (in.kind == CollKind::kAllreduce && multi_node) return Algo::kHier;
  if (in.bytes <= in.small_bytes) return Algo::kRecursive;
  return Algo::kRing;
}

TunedChoice tune_algo(const CostModel& model, const AlgoInputs& in, const AlgoOverrides& forced,
                      bool explain) {
  const bool multi_node = in.ranks_per_node > 0;
  CostInputs ci;
  ci.kind = in.kind;
  ci.bytes = in.bytes;
  ci.nranks = in.nranks;
  ci.ranks_per_node = in.ranks_per_node;
  ci.chunk_bytes = in.chunk_bytes;
  std::vector<std::pair<double, Algo>> ranked;
  for (Algo a : {Algo::kRing, Algo::kTree, Algo::kRecursive, Algo::kHier}) {
    if (algo_applies(a, in.kind, multi_node)) ranked.push_back({predict_us(model, a, ci), a});
  }
  std::stable_sort(ranked.begin(), ranked.end());
  TunedChoice c;
  const Algo f = forced.for_kind(in.kind);
  const bool use_forced = f != Algo::kAuto && algo_applies(f, in.kind, multi_node);
  c.algo = use_forced ? f : ranked.front().second;
  for (const auto& [us, a] : ranked) {
    if (a == c.algo) c.predicted_us = us;
  }
  if (!explain) return c;
  char head[160];
  std::snprintf(
      head, sizeof(head), "%s %zu B on %d ranks%s: ", coll_name(in.kind), in.bytes, in.nranks,
      multi_node ? (" (nodes of " + std::to_string(in.ranks_per_node) + ")").c_str() : "");
  c.explanation = head;
  for (size_t i = 0; i < ranked.size(); ++i) {
    char part[96];
    std::snprintf(part, sizeof(part), "%s%s %.1f us", i ? " < " : "",
                  algo_name(ranked[i].second, in.kind), ranked[i].first);
    c.explanation += part;
  }
  c.explanation += use_forced ? std::string("; forced: ") + algo_name(f, in.kind) : "";
  c.explanation += " [" + model.source + "]";
  return c;
}

}  // namespace efacoll

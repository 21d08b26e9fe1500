#include "tune/algo.h"

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

#include "coll/channels.h"
#include "coll/registry.h"
#include "tune/cost_model.h"

namespace efacoll {

const char* algo_name(Algo a, CollKind kind) {
  switch (a) {
    case Algo::kAuto:
      return "auto";
    case Algo::kLl:
      return "low-latency (IPC)";
    case Algo::kIpc:
      return "IPC direct";
    default:
      break;
  }
  const ScheduleBuilder* b = find_schedule_builder(a, kind);
  // The hierarchical allreduce is named for every collective: its GPU paths exist for all three.
  if (b == nullptr) b = find_schedule_builder(a, CollKind::kAllreduce);
  return b ? b->name : "?";
}

bool algo_applies(Algo a, CollKind kind, bool multi_node) {
  if (a == Algo::kLl || a == Algo::kIpc) return !multi_node;
  if (a == Algo::kAuto) return true;
  const ScheduleBuilder* b = find_schedule_builder(a, kind);
  return b != nullptr && builder_applies(*b, multi_node);
}

bool fabric_algo(Algo a) { return a != Algo::kAuto && a != Algo::kLl && a != Algo::kIpc; }

Algo& AlgoOverrides::for_kind(CollKind kind) {
  return kind == CollKind::kAllreduce   ? allreduce
         : kind == CollKind::kAllgather ? allgather
                                        : reduce_scatter;
}

bool algo_takes_channels(Algo a, CollKind kind, bool inplace) {
  const ScheduleBuilder* b = find_schedule_builder(a, kind);
  return b != nullptr && builder_takes_channels(*b, inplace);
}

Algo AlgoOverrides::for_kind(CollKind kind) const {
  return const_cast<AlgoOverrides*>(this)->for_kind(kind);
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
  else if (name == "ll")
    *out = Algo::kLl;
  else if (name == "ipc")
    *out = Algo::kIpc;
  else
    return false;
  return true;
}

}  // namespace

std::string size_text(size_t bytes) {
  char out[32];
  if (bytes >= (size_t(1) << 20) && bytes % (size_t(1) << 20) == 0)
    std::snprintf(out, sizeof(out), "%zu MiB", bytes >> 20);
  else if (bytes >= 1024 && bytes % 1024 == 0)
    std::snprintf(out, sizeof(out), "%zu KiB", bytes >> 10);
  else
    std::snprintf(out, sizeof(out), "%zu B", bytes);
  return out;
}

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
        return Status(Code::kInvalid, bad + "unknown algorithm '" + item +
                                          "' (auto, ring, tree, rd, rh, hier, ll, ipc)");
      }
      // One name for all: each collective takes it where it applies.
      o.allreduce = a;
      const bool any_scale = !fabric_algo(a);  // ll and ipc: inside one node
      o.allgather = algo_applies(a, CollKind::kAllgather, !any_scale) ? a : Algo::kAuto;
      o.reduce_scatter = algo_applies(a, CollKind::kReduceScatter, !any_scale) ? a : Algo::kAuto;
    } else {
      const std::string coll = item.substr(0, colon), name = item.substr(colon + 1);
      if (!parse_name(name, &a)) {
        return Status(Code::kInvalid, bad + "unknown algorithm '" + name + "'");
      }
      const CollKind kind = coll == "allreduce"   ? CollKind::kAllreduce
                            : coll == "allgather" ? CollKind::kAllgather
                                                  : CollKind::kReduceScatter;
      if (coll != "allreduce" && coll != "allgather" && coll != "reduce_scatter") {
        return Status(Code::kInvalid, bad + "unknown collective '" + coll +
                                          "' (allreduce, allgather, reduce_scatter)");
      }
      if (!algo_applies(a, kind, fabric_algo(a))) {
        return Status(Code::kInvalid, bad + name + " does not exist for " + coll);
      }
      o.for_kind(kind) = a;
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
  if (fabric_algo(f) && algo_applies(f, in.kind, multi_node)) return f;
  if (in.kind == CollKind::kAllreduce && multi_node) return Algo::kHier;
  if (in.bytes <= in.small_bytes) return Algo::kRecursive;
  return Algo::kRing;
}

namespace {

struct Candidate {
  double us;
  Algo algo;
  size_t chunk;
  int channels;
};

// The chunk sizes and channel counts the tuner weighs (one value where the user forced it):
// 64 KiB to 4 MiB (more for huge calls), and no smaller than a 64th of a block, whatever the
// channels. Thousands of small messages in one call gain little overlap and can stall a provider
// (the tree with 16 KiB chunks on 128 MiB stalls tcp;ofi_rxm); counted per channel, channels let
// them in again: 64 KiB x 8 channels on a 128 MiB ring ran at 0.47 of 1 MiB x 1 on tcp.
constexpr double kMaxChunksPerBlock = 64;
constexpr size_t kMinChunkBytes = size_t(64) << 10;
// Calls from this size are bandwidth-bound on every platform the model knows.
constexpr size_t kRingTieBytes = size_t(1) << 20;
constexpr double kLatencyTieMargin = 0.05;

std::vector<size_t> chunk_options(const AlgoInputs& in) {
  if (in.chunk_forced) return {std::min(in.chunk_bytes, in.max_chunk_bytes)};
  // Up to 4 MiB, or as large as keeps a whole-vector algorithm at 64 chunks.
  size_t top = size_t(4) << 20;
  while (top < in.bytes / kMaxChunksPerBlock && top < in.max_chunk_bytes) top *= 4;
  std::vector<size_t> out;
  for (size_t c = top; c >= kMinChunkBytes; c /= 4) {
    if (c <= in.max_chunk_bytes) out.push_back(c);
  }
  if (out.empty()) out.push_back(in.max_chunk_bytes);
  return out;
}

// What a block holds: the ring's share of the vector (the tree and recursive doubling move the
// whole vector).
double bytes_per_block(const AlgoInputs& in, Algo a) {
  return a == Algo::kRing ? static_cast<double>(in.bytes) / in.nranks
                          : static_cast<double>(in.bytes);
}

// The messages of a block over all channels.
bool too_many_chunks(const AlgoInputs& in, Algo a, size_t chunk) {
  return !in.chunk_forced && bytes_per_block(in, a) / chunk > kMaxChunksPerBlock;
}

// Channels that would cut a block into messages below the smallest chunk: pieces the chunk
// options leave out on purpose (8 channels of 32 KiB on a 1 MiB reduce-scatter ran at 0.6 of
// recursive halving on tcp).
bool too_thin(const AlgoInputs& in, Algo a, int channels) {
  return bytes_per_block(in, a) / channels < kMinChunkBytes;
}

std::vector<int> channel_options(const AlgoInputs& in, Algo a) {
  if (!algo_takes_channels(a, in.kind, in.inplace)) return {1};
  if (in.channels > 0) return {in.channels};
  std::vector<int> out;
  for (int c = 1; c <= std::max(1, in.max_channels); c *= 2) out.push_back(c);
  return out;
}

// Fastest (chunk, channels) for one algorithm, but a prediction within kChunkTieMargin of the
// fastest with fewer messages goes first: what smaller chunks gain is overlap the model
// assumes, what they cost (a message each) grows where ranks share cores. On tcp, 4 ranks on 2
// cores, a 4 MiB reduce-scatter ring in 64 KiB chunks ran 1.2-1.8x slower than in larger ones,
// and a 2 MiB allreduce on 8 channels 2x slower than on one; both had been predicted best by a
// few percent. Inside one node channels add no link, so fewer channels go first too; across
// nodes they spread the call over the NICs, and channel counts compete on their predictions.
constexpr double kChunkTieMargin = 0.10;

Candidate best_for(const CostModel& model, Algo a, const AlgoInputs& in) {
  CostInputs ci;
  ci.kind = in.kind;
  ci.bytes = in.bytes;
  ci.nranks = in.nranks;
  ci.ranks_per_node = in.ranks_per_node;
  const bool one_node = in.ranks_per_node == 0 || in.ranks_per_node >= in.nranks;
  // Per channel count (ascending), its chunks from the largest (chunk_options' order): from the
  // fewest messages to the most.
  std::vector<std::vector<Candidate>> by_channels;
  const std::vector<size_t> chunks = chunk_options(in);
  for (int channels : channel_options(in, a)) {
    if (channels > 1 && too_thin(in, a, channels)) continue;
    std::vector<Candidate> options;
    for (size_t chunk : chunks) {
      // The largest chunk stays a candidate whatever the count.
      if (chunk != chunks.front() && too_many_chunks(in, a, chunk)) continue;
      ci.chunk_bytes = chunk;
      ci.channels = channels;
      options.push_back({predict_us(model, a, ci), a, chunk, channels});
    }
    if (!options.empty()) by_channels.push_back(options);
  }
  if (by_channels.empty()) return {0, a, 0, 1};
  auto fastest_of = [](const std::vector<Candidate>& v) {
    double f = v.front().us;
    for (const Candidate& c : v) f = std::min(f, c.us);
    return f;
  };
  // The first of `v` within the margin of `fastest`.
  auto first_near = [](const std::vector<Candidate>& v, double fastest) -> const Candidate* {
    for (const Candidate& c : v) {
      if (c.us <= fastest * (1 + kChunkTieMargin)) return &c;
    }
    return nullptr;
  };
  if (one_node) {
    double fastest = fastest_of(by_channels.front());
    for (const auto& v : by_channels) fastest = std::min(fastest, fastest_of(v));
    for (const auto& v : by_channels) {
      if (const Candidate* c = first_near(v, fastest)) return *c;
    }
  }
  Candidate best{0, a, 0, 1};
  bool first = true;
  for (const auto& v : by_channels) {
    const Candidate pick = *first_near(v, fastest_of(v));
    if (first || pick.us < best.us * (1 - 1e-9)) best = pick;
    first = false;
  }
  return best;
}

// Every algorithm that applies, each with its best chunk and channels, in the tuner's order:
// the fastest prediction first, then the tie rules.
std::vector<Candidate> ranked_candidates(const CostModel& model, const AlgoInputs& in) {
  const bool multi_node = in.ranks_per_node > 0;
  std::vector<Candidate> ranked;
  for (const ScheduleBuilder& b : schedule_builders()) {
    if (b.kind == in.kind && builder_applies(b, multi_node))
      ranked.push_back(best_for(model, b.algo, in));
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const Candidate& x, const Candidate& y) { return x.us < y.us; });
  // The model cannot tell apart predictions a few percent apart. From 1 MiB, where bandwidth
  // decides, the ring goes first on such ties (within 3 %): pipelined, one neighbour each way,
  // its chunks spread over the rails. Below, latency decides; inside one node, where every step
  // crosses the same links, of the algorithms within 5 % the one with the fewest steps goes
  // first: each step waits for the slowest peer, so a late rank costs it once per step. Measured
  // on tcp, 4 ranks on 2 cores: a 64 KiB allgather's ring lost to recursive doubling by 15-28 %
  // on such ties, and a 128 KiB allreduce's tree (predicted 2 % faster) by 1.6x. Across nodes
  // the steps cross different links, which the model prices apart: its pick stands.
  if (in.bytes >= kRingTieBytes) {
    for (size_t i = 1; i < ranked.size(); ++i) {
      if (ranked[i].algo == Algo::kRing && ranked[i].us <= ranked[0].us * 1.03)
        std::rotate(ranked.begin(), ranked.begin() + i, ranked.begin() + i + 1);
    }
  } else if (!multi_node) {
    // Of equal steps, the fewer messages in the whole call: less to post on ranks sharing cores.
    // Measured on 3 ranks (2 cores): a small allgather's ring, predicted 0.1 us faster than
    // recursive doubling with as many steps, ran 9-20 % slower.
    auto work = [&](Algo a) {
      return std::make_pair(latency_steps(a, in.kind, in.nranks),
                            call_messages(a, in.kind, in.nranks));
    };
    size_t fewest = 0;
    for (size_t i = 1; i < ranked.size(); ++i) {
      if (ranked[i].us <= ranked[0].us * (1 + kLatencyTieMargin) &&
          work(ranked[i].algo) < work(ranked[fewest].algo))
        fewest = i;
    }
    std::rotate(ranked.begin(), ranked.begin() + fewest, ranked.begin() + fewest + 1);
  }
  return ranked;
}

TunedChoice choice_of(const Candidate& k) {
  TunedChoice c;
  c.algo = k.algo;
  c.predicted_us = k.us;
  c.chunk_bytes = k.chunk;
  c.channels = k.channels;
  return c;
}

}  // namespace

std::vector<TunedChoice> near_candidates(const CostModel& model, const AlgoInputs& in,
                                         double margin) {
  const std::vector<Candidate> ranked = ranked_candidates(model, in);
  double fastest = ranked.front().us;
  for (const Candidate& k : ranked) fastest = std::min(fastest, k.us);
  std::vector<TunedChoice> out;
  for (size_t i = 0; i < ranked.size(); ++i) {
    if (i == 0 || ranked[i].us <= fastest * (1 + margin)) out.push_back(choice_of(ranked[i]));
  }
  return out;
}

TunedChoice tune_algo(const CostModel& model, const AlgoInputs& in, const AlgoOverrides& forced,
                      bool explain) {
  const bool multi_node = in.ranks_per_node > 0;
  const std::vector<Candidate> ranked = ranked_candidates(model, in);
  TunedChoice c;
  const Algo f = forced.for_kind(in.kind);
  const bool use_forced = fabric_algo(f) && algo_applies(f, in.kind, multi_node);
  const Algo pick = use_forced ? f : ranked.front().algo;
  for (const Candidate& k : ranked) {
    if (k.algo == pick) c = choice_of(k);
  }
  if (!explain) return c;
  char head[160];
  std::snprintf(
      head, sizeof(head), "%s %zu B on %d ranks%s: ", coll_name(in.kind), in.bytes, in.nranks,
      multi_node ? (" (nodes of " + std::to_string(in.ranks_per_node) + ")").c_str() : "");
  c.explanation = head;
  for (size_t i = 0; i < ranked.size(); ++i) {
    char part[160];
    const char* sep = i == 0 ? "" : ranked[i].us < ranked[i - 1].us ? " ~ " : " < ";
    std::snprintf(part, sizeof(part), "%s%s %.1f us (chunk %s, %d channel%s)", sep,
                  algo_name(ranked[i].algo, in.kind), ranked[i].us,
                  size_text(ranked[i].chunk).c_str(), ranked[i].channels,
                  ranked[i].channels == 1 ? "" : "s");
    c.explanation += part;
  }
  if (ranked.size() > 1 && ranked[0].us > ranked[1].us) {
    c.explanation += in.bytes >= kRingTieBytes ? " (within 3 %: the ring)"
                                               : " (within 5 %: the fewest steps, then messages)";
  }
  c.explanation += use_forced ? std::string("; forced: ") + algo_name(f, in.kind) : "";
  c.explanation += " [" + model.source + "]";
  return c;
}

}  // namespace efacoll

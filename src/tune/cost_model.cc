#include "tune/cost_model.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <vector>

#include "coll/fold.h"

namespace efacoll {

Status platform_model(const std::string& platform, CostModel* out) {
  CostModel m;
  if (platform == "p5") {
    // NVLink4 under NVSwitch: ~360 GB/s busbw; four 100 Gb/s EFAs per GPU: ~48.9 GB/s measured.
    m.intra = {5.0, 360.0};
    m.inter = {15.0, 48.9};
    m.per_message_us = 0.5;
    m.reduce_gbps = 1000;  // GPU kernels
  } else if (platform == "p4d") {
    // NVLink3 under NVSwitch: ~230 GB/s busbw; one 100 Gb/s EFA per two GPUs: ~6.1 GB/s each.
    m.intra = {6.0, 230.0};
    m.inter = {18.0, 6.1};
    m.per_message_us = 0.5;
    m.reduce_gbps = 700;
  } else if (platform == "local") {
    m.intra = {15.0, 2.0};
    m.inter = {60.0, 1.0};
    m.per_message_us = 2.0;
    m.reduce_gbps = 2.0;
  } else {
    return Status(Code::kInvalid, "unknown platform '" + platform + "' (p4d, p5, local)");
  }
  m.source = platform + " defaults";
  *out = m;
  return Status::ok();
}

Status parse_model(const std::string& text, CostModel* out) {
  CostModel m = *out;
  // Every key a model file may set (the docs list them in the same order).
  const std::map<std::string, double*> fields = {
      {"intra_alpha_us", &m.intra.alpha_us},
      {"intra_alpha_large_us", &m.intra.alpha_large_us},
      {"intra_gbps", &m.intra.gbps},
      {"intra_large_gbps", &m.intra.large_gbps},
      {"inter_alpha_us", &m.inter.alpha_us},
      {"inter_alpha_large_us", &m.inter.alpha_large_us},
      {"inter_gbps", &m.inter.gbps},
      {"inter_large_gbps", &m.inter.large_gbps},
      {"per_message_us", &m.per_message_us},
      {"small_message_us", &m.small_message_us},
      {"reduce_gbps", &m.reduce_gbps},
      {"reduce_large_gbps", &m.reduce_large_gbps},
      {"gpu_ll_alpha_us", &m.gpu_ll.alpha_us},
      {"gpu_ll_gbps", &m.gpu_ll.gbps},
      {"gpu_ipc_alpha_us", &m.gpu_ipc.alpha_us},
      {"gpu_ipc_gbps", &m.gpu_ipc.gbps},
  };
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    line = line.substr(0, line.find('#'));
    const size_t eq = line.find('=');
    auto trim = [](std::string s) {
      s.erase(0, s.find_first_not_of(" \t"));
      s.erase(s.find_last_not_of(" \t\r") + 1);
      return s;
    };
    if (trim(line).empty()) continue;
    if (eq == std::string::npos) {
      return Status(Code::kInvalid, "line " + std::to_string(number) + ": expected key = value");
    }
    const std::string key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0' || !(v > 0)) {
      return Status(Code::kInvalid, "line " + std::to_string(number) + ": " + key +
                                        " needs a positive number, not '" + value + "'");
    }
    auto it = fields.find(key);
    if (it == fields.end()) {
      return Status(Code::kInvalid, "line " + std::to_string(number) + ": unknown key " + key);
    }
    *it->second = v;
  }
  *out = m;
  return Status::ok();
}

Status load_model_file(const std::string& path, CostModel* out) {
  std::ifstream in(path);
  if (!in) return Status(Code::kInvalid, "cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  CostModel m;
  platform_model("local", &m);
  EFACOLL_RETURN_IF_ERROR(parse_model(text.str(), &m));
  m.source = path;
  *out = m;
  return Status::ok();
}

namespace {

// at_low up to `low` bytes, at_high from `high`, geometric in between (0 on either side: the
// other). Rates by call size and latencies by message size both change this way.
double blend(double at_low, double at_high, double bytes, double low, double high) {
  if (at_low <= 0) return at_high;
  if (at_high <= 0 || bytes <= low) return at_low;
  if (bytes >= high) return at_high;
  const double t = (std::log2(bytes) - std::log2(low)) / (std::log2(high) - std::log2(low));
  return at_low * std::pow(at_high / at_low, t);
}

// A per-message figure for messages of `bytes`: at_small up to 4 KiB (the providers' eager
// paths), at_large from 16 KiB.
double by_message(double at_small, double at_large, double bytes) {
  return blend(at_small, at_large, bytes, 4096, 16384);
}

}  // namespace

double rate_at(double gbps, double large_gbps, double call_bytes) {
  return blend(gbps, large_gbps, call_bytes, 1 << 20, 1 << 24);
}

namespace {

// The links a flat algorithm runs over: inside one node, or a ring whose channels rotate
// across nodes (a fraction of its bytes on the fabric), or the fabric's pace throughout.
struct Links {
  const LinkCost* latency;  // the link class whose step latency paces the algorithm
  double us_per_byte;
};

Links links_for(const CostModel& m, Algo algo, const CostInputs& in) {
  const bool multi = in.ranks_per_node > 0 && in.ranks_per_node < in.nranks;
  const double n = static_cast<double>(in.bytes);
  const double intra = 1 / (rate_at(m.intra.gbps, m.intra.large_gbps, n) * 1e3);
  if (!multi) return {&m.intra, intra};
  const double inter = 1 / (rate_at(m.inter.gbps, m.inter.large_gbps, n) * 1e3);
  if (algo != Algo::kRing || in.ranks_per_node < 2) return {&m.inter, inter};
  const int c = std::max(1, in.channels), l = in.ranks_per_node;
  const double crossing = std::ceil(static_cast<double>(c) / l) / c;
  return {&m.inter, std::max(crossing * inter, intra)};
}

// Recursive doubling where p is not a power of two (coll/fold.h): the ranks past the largest
// power of two q fold into ranks 0.. first and get the result back last, but the exchanges do not
// all wait for the fold: in each pair of the first step, a rank that had nothing folded in sends at
// once. So a step runs on each rank as soon as its own and its partner's data are there (one
// latency per message, nothing else costs): between floor(log2 p) + 1 and + 2 steps (3 ranks: 2; 7:
// 4).
int doubling_steps_with_fold(int p) {
  static std::mutex mutex;
  static std::map<int, int> known;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = known.find(p);
  if (it != known.end()) return it->second;
  const Fold fold = fold_of(p);
  const int q = fold.p, extra = fold.extra;
  std::vector<int> ready(q), next(q);
  for (int r = 0; r < q; ++r) ready[r] = r < extra ? 1 : 0;
  for (int bit = 1; bit < q; bit *= 2) {
    for (int r = 0; r < q; ++r) next[r] = std::max(ready[r], ready[r ^ bit] + 1);
    ready.swap(next);
  }
  int finish = 0;
  for (int r = 0; r < q; ++r) finish = std::max(finish, ready[r] + (r < extra ? 1 : 0));
  return known[p] = finish;
}

}  // namespace

int latency_steps(Algo algo, CollKind kind, int p) {
  if (p <= 1) return 0;
  const Fold fold = fold_of(p);
  switch (algo) {
    case Algo::kRecursive:
      if (fold.extra == 0) return fold.steps;
      // Recursive halving (reduce-scatter) sends its blocks only after the fold.
      if (kind != CollKind::kReduceScatter) return doubling_steps_with_fold(p);
      return fold.steps + 2;
    case Algo::kTree:
      return 2 * fold.steps;
    default:
      return (kind == CollKind::kAllreduce ? 2 : 1) * (p - 1);
  }
}

int call_messages(Algo algo, CollKind kind, int p) {
  if (p <= 1) return 0;
  const Fold fold = fold_of(p);
  switch (algo) {
    case Algo::kRecursive:
      return fold.p * fold.steps + 2 * fold.extra;
    case Algo::kTree:
      return 4 * (p - 1);
    default:
      return (kind == CollKind::kAllreduce ? 2 : 1) * p * (p - 1);
  }
}

namespace {

// Time of `steps` latencies, `wire` microseconds on the link, `messages` of `msg` bytes posted,
// `reduced` bytes through the reduction. Pipelined over `pieces` chunks (the ring, the tree),
// the slower of wire and reduction counts whole and the other once per piece; recursive steps
// do one after the other. Posting and completing messages takes the progress thread's CPU,
// which on shm and tcp also moves the data: it adds in both.
double cost(const CostModel& m, const Links& link, double call_bytes, double msg, double steps,
            double wire, double messages, double reduced, double pieces = 1) {
  const double alpha = by_message(link.latency->alpha_us, link.latency->alpha_large_us, msg);
  const double reduce = reduced / (rate_at(m.reduce_gbps, m.reduce_large_gbps, call_bytes) * 1e3),
               post = messages * by_message(m.small_message_us, m.per_message_us, msg);
  return steps * alpha + post + std::max(wire, reduce) +
         std::min(wire, reduce) / std::max(1.0, pieces);
}

double flat_us(const CostModel& m, Algo algo, const CostInputs& in) {
  const int p = in.nranks;
  if (p <= 1) return 0;
  const Links link = links_for(m, algo, in);
  const double n = static_cast<double>(in.bytes), chunk = static_cast<double>(in.chunk_bytes);
  const double channels = std::max(1, in.channels);
  const double block = n / p;
  // Chunks per block over all channels: each channel pipelines its share separately.
  const double pieces = channels * std::max(1.0, std::ceil(block / channels / chunk));
  const double msg = std::min(chunk, block / channels);  // the ring's messages
  const Fold fold = fold_of(p);
  const double lg = fold.steps;
  const bool pow2 = fold.extra == 0;
  auto wire = [&](double bytes) { return bytes * link.us_per_byte; };
  switch (in.kind) {
    case CollKind::kAllreduce:
      if (algo == Algo::kTree) {
        // Both trees pipelined: about 2n in and out per rank, plus filling 2 x depth stages.
        const double tchunk = static_cast<double>(
            tree_chunk_bytes(static_cast<size_t>(n / channels), static_cast<size_t>(chunk)));
        const double depth = latency_steps(algo, in.kind, p) / 2, fill = std::min(tchunk, n / 2);
        const double tpieces = channels * std::ceil(n / channels / tchunk);
        return cost(m, link, n, std::min(tchunk, n / 2 / channels), 2 * depth,
                    wire(2 * n + 2 * depth * fill), 3 * tpieces, n, tpieces);
      }
      if (algo == Algo::kRecursive) {
        const double steps = latency_steps(algo, in.kind, p);
        return cost(m, link, n, n / channels, steps, wire(steps * n), steps * channels, lg * n);
      }
      return cost(m, link, n, msg, 2 * (p - 1), wire(2 * (p - 1) * block), 2 * (p - 1) * pieces,
                  (p - 1) * block, pieces);
    case CollKind::kAllgather:
      if (algo == Algo::kRecursive) {
        return cost(m, link, n, n / 2, latency_steps(algo, in.kind, p),
                    wire((p - 1) * block + (pow2 ? 0 : n + block)), (p - 1) * pieces, 0);
      }
      return cost(m, link, n, msg, p - 1, wire((p - 1) * block), (p - 1) * pieces, 0, pieces);
    default:  // reduce-scatter
      if (algo == Algo::kRecursive) {
        // Plus the accumulator's initial copy (counted with the reductions).
        return cost(m, link, n, n / 2, latency_steps(algo, in.kind, p),
                    wire((p - 1) * block + (pow2 ? 0 : n + block)), (p - 1) * pieces,
                    n + (p - 1) * block);
      }
      return cost(m, link, n, msg, p - 1, wire((p - 1) * block), (p - 1) * pieces, (p - 1) * block,
                  pieces);
  }
}

// The cheapest flat algorithm for a phase of a hierarchical call, on one node's links or on
// the fabric between one rank per node.
double best_flat_us(const CostModel& m, CollKind kind, double n, int p, bool fabric,
                    const CostInputs& call) {
  CostInputs in = call;
  in.kind = kind;
  in.bytes = static_cast<size_t>(n);
  in.nranks = p;
  in.ranks_per_node = fabric ? 1 : 0;
  double best = flat_us(m, Algo::kRing, in);
  best = std::min(best, flat_us(m, Algo::kRecursive, in));
  if (kind == CollKind::kAllreduce) best = std::min(best, flat_us(m, Algo::kTree, in));
  return best;
}

}  // namespace

double correction(const CostModel& m, CollKind kind, Algo algo, double bytes) {
  // The points of this algorithm, by size (calibration adds them in increasing size).
  const AlgoCorrection *below = nullptr, *above = nullptr;
  for (const AlgoCorrection& c : m.corrections) {
    if (c.kind != kind || c.algo != algo) continue;
    if (c.bytes <= bytes) below = &c;
    if (c.bytes >= bytes && above == nullptr) above = &c;
  }
  if (below == nullptr && above == nullptr) return 1;
  const double x = std::log2(std::max(bytes, 1.0));
  auto fade = [&](const AlgoCorrection* c) {  // to 1 over two octaves past the last point
    const double t = std::min(1.0, std::fabs(x - std::log2(c->bytes)) / 2);
    return std::pow(c->factor, 1 - t);
  };
  // Below a latency-bound first point a pattern's time no longer changes with size: it holds.
  if (below == nullptr) return above->holds_below ? above->factor : fade(above);
  if (above == nullptr) return fade(below);
  if (above == below) return below->factor;
  const double t =
      (x - std::log2(below->bytes)) / (std::log2(above->bytes) - std::log2(below->bytes));
  return below->factor * std::pow(above->factor / below->factor, t);
}

void smooth_corrections(std::vector<AlgoCorrection>* points) {
  std::vector<AlgoCorrection>& all = *points;
  std::vector<double> smoothed(all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    smoothed[i] = all[i].factor;
    // The nearest points of the same series below and above (for the smallest, the next two).
    auto nearest = [&](double bytes, bool up) -> const AlgoCorrection* {
      const AlgoCorrection* best = nullptr;
      for (const AlgoCorrection& c : all) {
        if (c.kind != all[i].kind || c.algo != all[i].algo) continue;
        const bool beyond = up ? c.bytes > bytes : c.bytes < bytes;
        if (beyond && (!best || (up ? c.bytes < best->bytes : c.bytes > best->bytes))) best = &c;
      }
      return best;
    };
    const AlgoCorrection* below = nearest(all[i].bytes, false);
    const AlgoCorrection* above = nearest(all[i].bytes, true);
    if (!below && above) below = nearest(above->bytes, true);
    if (!below || !above) continue;
    double three[3] = {below->factor, all[i].factor, above->factor};
    std::sort(three, three + 3);
    smoothed[i] = three[1];
  }
  for (size_t i = 0; i < all.size(); ++i) all[i].factor = smoothed[i];
}

double predict_us(const CostModel& m, Algo algo, const CostInputs& in) {
  const double n = static_cast<double>(in.bytes);
  const bool multi = in.ranks_per_node > 0 && in.ranks_per_node < in.nranks;
  if (algo == Algo::kHier && multi) {
    const int l = in.ranks_per_node, nodes = in.nranks / l;
    // Reduce-scatter inside, allreduce of the slice across, allgather inside.
    return best_flat_us(m, CollKind::kReduceScatter, n, l, false, in) +
           best_flat_us(m, CollKind::kAllreduce, n / l, nodes, true, in) +
           best_flat_us(m, CollKind::kAllgather, n, l, false, in);
  }
  return flat_us(m, algo, in) * correction(m, in.kind, algo, n);
}

double predict_node_us(const CostModel& m, Algo algo, const CostInputs& in) {
  const double n = static_cast<double>(in.bytes), p = in.nranks;
  if (p <= 1) return 0;
  const bool all = in.kind == CollKind::kAllreduce;
  if (algo == Algo::kLl) {
    // Every rank pushes to every peer: the whole vector (allreduce) or one block.
    const double pushed = (p - 1) * (all ? n : n / p);
    return m.gpu_ll.alpha_us + pushed / (m.gpu_ll.gbps * 1e3);
  }
  const double read = (all ? 2 : 1) * (p - 1) / p * n;
  return m.gpu_ipc.alpha_us + read / (m.gpu_ipc.gbps * 1e3);
}

}  // namespace efacoll

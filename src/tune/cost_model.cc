#include "tune/cost_model.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

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
    if (key == "intra_alpha_us")
      m.intra.alpha_us = v;
    else if (key == "intra_gbps")
      m.intra.gbps = v;
    else if (key == "inter_alpha_us")
      m.inter.alpha_us = v;
    else if (key == "inter_gbps")
      m.inter.gbps = v;
    else if (key == "per_message_us")
      m.per_message_us = v;
    else if (key == "reduce_gbps")
      m.reduce_gbps = v;
    else
      return Status(Code::kInvalid, "line " + std::to_string(number) + ": unknown key " + key);
  }
  *out = m;
  return Status::ok();
}

size_t tree_chunk_bytes(size_t bytes, size_t max_chunk) {
  return std::max<size_t>(1, std::min(max_chunk, std::max<size_t>(4096, bytes / 32)));
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

double log2_floor(int n) {
  int steps = 0;
  while ((2 << steps) <= n) ++steps;
  return steps;
}

// Time over one link class: `steps` latencies, `bytes` through the link, `messages` posted,
// `reduced` bytes through the reduction. Where the algorithm pipelines chunks (the ring, the
// tree), posting and reducing overlap the transfers; recursive steps do one after the other.
double cost(const CostModel& m, const LinkCost& link, double steps, double bytes, double messages,
            double reduced, bool pipelined = false) {
  const double wire = bytes / (link.gbps * 1e3), reduce = reduced / (m.reduce_gbps * 1e3),
               post = messages * m.per_message_us;
  return steps * link.alpha_us +
         (pipelined ? std::max({wire, reduce, post}) : wire + reduce + post);
}

double flat_us(const CostModel& m, const LinkCost& link, Algo algo, CollKind kind, double n, int p,
               double chunk) {
  if (p <= 1) return 0;
  const double block = n / p, chunks_per_block = std::max(1.0, std::ceil(block / chunk));
  const double lg = log2_floor(p);
  const bool pow2 = (p & (p - 1)) == 0;
  switch (kind) {
    case CollKind::kAllreduce:
      if (algo == Algo::kTree) {
        // Both trees pipelined: about 2n in and out per rank, plus filling 2 x depth stages.
        const double tchunk = static_cast<double>(
            tree_chunk_bytes(static_cast<size_t>(n), static_cast<size_t>(chunk)));
        const double depth = lg, fill = std::min(tchunk, n / 2);
        return cost(m, link, 2 * depth, 2 * n + 2 * depth * fill, 3 * std::ceil(n / tchunk), n,
                    true);
      }
      if (algo == Algo::kRecursive) {
        const double steps = lg + (pow2 ? 0 : 2);
        return cost(m, link, steps, steps * n, steps, lg * n);
      }
      return cost(m, link, 2 * (p - 1), 2 * (p - 1) * block, 2 * (p - 1) * chunks_per_block,
                  (p - 1) * block, true);
    case CollKind::kAllgather:
      if (algo == Algo::kRecursive) {
        return cost(m, link, lg + (pow2 ? 0 : 2), (p - 1) * block + (pow2 ? 0 : n + block),
                    (p - 1) * chunks_per_block, 0);
      }
      return cost(m, link, p - 1, (p - 1) * block, (p - 1) * chunks_per_block, 0, true);
    default:  // reduce-scatter
      if (algo == Algo::kRecursive) {
        // Plus the accumulator's initial copy (counted with the reductions).
        return cost(m, link, lg + (pow2 ? 0 : 2), (p - 1) * block + (pow2 ? 0 : n + block),
                    (p - 1) * chunks_per_block, n + (p - 1) * block);
      }
      return cost(m, link, p - 1, (p - 1) * block, (p - 1) * chunks_per_block, (p - 1) * block,
                  true);
  }
}

// The cheapest flat algorithm for a phase of a hierarchical call.
double best_flat_us(const CostModel& m, const LinkCost& link, CollKind kind, double n, int p,
                    double chunk) {
  double best = flat_us(m, link, Algo::kRing, kind, n, p, chunk);
  best = std::min(best, flat_us(m, link, Algo::kRecursive, kind, n, p, chunk));
  if (kind == CollKind::kAllreduce)
    best = std::min(best, flat_us(m, link, Algo::kTree, kind, n, p, chunk));
  return best;
}

}  // namespace

double predict_us(const CostModel& m, Algo algo, const CostInputs& in) {
  const double n = static_cast<double>(in.bytes), chunk = static_cast<double>(in.chunk_bytes);
  const bool multi = in.ranks_per_node > 0 && in.ranks_per_node < in.nranks;
  if (algo == Algo::kHier && multi) {
    const int l = in.ranks_per_node, nodes = in.nranks / l;
    // Reduce-scatter inside, allreduce of the slice across, allgather inside.
    return best_flat_us(m, m.intra, CollKind::kReduceScatter, n, l, chunk) +
           best_flat_us(m, m.inter, CollKind::kAllreduce, n / l, nodes, chunk) +
           best_flat_us(m, m.intra, CollKind::kAllgather, n, l, chunk);
  }
  // A flat algorithm across nodes runs at the pace of the fabric.
  return flat_us(m, multi ? m.inter : m.intra, algo, in.kind, n, in.nranks, chunk);
}

}  // namespace efacoll

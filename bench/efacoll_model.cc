// efacoll-model: what the tuner's cost model predicts for p4d and p5 clusters of 1 ... 1024
// nodes of 8 GPUs: the algorithm it would choose, the time of one call, algbw and busbw
// (nccl-tests' definitions). Predictions, not measurements.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tune/algo.h"
#include "tune/cost_model.h"

using namespace efacoll;

namespace {

void usage() {
  std::fprintf(stderr,
               "usage: efacoll_model [-p p4d|p5|local] [-f MODEL_FILE] [-c allreduce|allgather|"
               "reduce_scatter] [-n MAX_NODES] [-g GPUS_PER_NODE]\n"
               "  default: p5 and p4d, all three collectives, 1 ... 1024 nodes of 8 GPUs\n");
}

double bus_factor(CollKind kind, int p) {
  return kind == CollKind::kAllreduce ? 2.0 * (p - 1) / p : double(p - 1) / p;
}

void table(const CostModel& m, CollKind kind, int max_nodes, int per_node) {
  const size_t sizes[] = {
      8, size_t(64) << 10, size_t(1) << 20, size_t(16) << 20, size_t(256) << 20, size_t(8) << 30};
  std::printf("\n## %s, %s, %d GPUs per node (predicted)\n\n", coll_name(kind), m.source.c_str(),
              per_node);
  std::printf(
      "| nodes | size | algorithm | chunk | channels | time (us) | algbw (GB/s) | busbw (GB/s) "
      "|\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  for (int nodes = 1; nodes <= max_nodes; nodes *= 2) {
    const int p = nodes * per_node;
    for (size_t bytes : sizes) {
      AlgoInputs in;
      in.kind = kind;
      in.bytes = bytes;
      in.nranks = p;
      in.ranks_per_node = nodes > 1 ? per_node : 0;
      const TunedChoice c = tune_algo(m, in, AlgoOverrides());
      const double algbw = bytes / (c.predicted_us * 1e3);
      char size[32];
      if (bytes >= (size_t(1) << 30))
        std::snprintf(size, sizeof(size), "%zu GiB", bytes >> 30);
      else if (bytes >= (size_t(1) << 20))
        std::snprintf(size, sizeof(size), "%zu MiB", bytes >> 20);
      else if (bytes >= 1024)
        std::snprintf(size, sizeof(size), "%zu KiB", bytes >> 10);
      else
        std::snprintf(size, sizeof(size), "%zu B", bytes);
      std::printf("| %d | %s | %s | %zu KiB | %d | %.1f | %.2f | %.2f |\n", nodes, size,
                  algo_name(c.algo, kind), c.chunk_bytes >> 10, c.channels, c.predicted_us, algbw,
                  algbw * bus_factor(kind, p));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> platforms;
  std::string file, coll;
  int max_nodes = 1024, per_node = 8;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "-p" && v)
      platforms.push_back(argv[++i]);
    else if (a == "-f" && v)
      file = argv[++i];
    else if (a == "-c" && v)
      coll = argv[++i];
    else if (a == "-n" && v)
      max_nodes = std::atoi(argv[++i]);
    else if (a == "-g" && v)
      per_node = std::atoi(argv[++i]);
    else {
      usage();
      return 2;
    }
  }
  if (platforms.empty() && file.empty()) platforms = {"p5", "p4d"};
  std::vector<CostModel> models;
  for (const std::string& p : platforms) {
    CostModel m;
    Status st = platform_model(p, &m);
    if (!st.is_ok()) {
      std::fprintf(stderr, "efacoll_model: %s\n", st.message().c_str());
      return 2;
    }
    models.push_back(m);
  }
  if (!file.empty()) {
    CostModel m;
    Status st = load_model_file(file, &m);
    if (!st.is_ok()) {
      std::fprintf(stderr, "efacoll_model: %s\n", st.message().c_str());
      return 2;
    }
    models.push_back(m);
  }
  std::vector<CollKind> kinds;
  if (coll.empty() || coll == "allreduce") kinds.push_back(CollKind::kAllreduce);
  if (coll.empty() || coll == "allgather") kinds.push_back(CollKind::kAllgather);
  if (coll.empty() || coll == "reduce_scatter") kinds.push_back(CollKind::kReduceScatter);
  if (kinds.empty() || max_nodes < 1 || per_node < 1) {
    usage();
    return 2;
  }
  std::printf("# efacoll-model: predictions of the tuner's cost model, not measurements\n");
  for (const CostModel& m : models) {
    for (CollKind k : kinds) table(m, k, max_nodes, per_node);
  }
  return 0;
}

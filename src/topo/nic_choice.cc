#include "topo/nic_choice.h"

#include <algorithm>
#include <cctype>

namespace efacoll {

NicChoice choose_nic(const std::string& requested, const Topology& topo, int gpu, int sharer,
                     int sharers, const std::vector<std::string>& offered) {
  NicChoice c;
  if (!requested.empty() && requested != "auto") {
    size_t begin = 0;
    for (;;) {
      const size_t end = requested.find(',', begin);
      std::string name = requested.substr(begin, end == std::string::npos ? end : end - begin);
      if (!name.empty()) c.domains.push_back(name);
      if (end == std::string::npos) break;
      begin = end + 1;
    }
    c.why = "named by EFACOLL_NIC";
    return c;
  }
  if (topo.nics.empty()) {
    c.why = "no EFA device in sysfs: the provider's first domain";
    return c;
  }
  if (gpu < 0 || gpu >= static_cast<int>(topo.gpu_nics.size()) || topo.gpu_nics[gpu].empty()) {
    c.why = "this rank's GPU is unknown: the provider's first domain";
    return c;
  }
  std::vector<int> nearest;
  for (int n : topo.gpu_nics[gpu]) {
    if (std::find(offered.begin(), offered.end(), topo.nics[n].domain) != offered.end()) {
      nearest.push_back(n);
    }
  }
  if (nearest.empty()) {
    c.why = "the provider drives none of GPU " + std::to_string(gpu) +
            "'s nearest NICs: its first domain";
    return c;
  }
  const size_t m = nearest.size(), s = static_cast<size_t>(std::max(1, sharers)),
               i = static_cast<size_t>(std::max(0, sharer)) % s;
  if (s <= m) {
    for (size_t k = i * m / s; k < (i + 1) * m / s; ++k)
      c.domains.push_back(topo.nics[nearest[k]].domain);
  } else {
    c.domains.push_back(topo.nics[nearest[i % m]].domain);
  }
  c.why = "nearest to GPU " + std::to_string(gpu) + " (" +
          path_type_name(topo.gpu_nic_distance[gpu]) + ", " + std::to_string(m) +
          " at that distance, " + std::to_string(s) + " rank(s) on that GPU)";
  return c;
}

RankGpu choose_rank_gpu(const std::vector<int>& node_gpus_from_context, int local_rank,
                        int gpu_count) {
  RankGpu g;
  if (gpu_count <= 0) {
    g.why = "no GPU in sysfs";
    return g;
  }
  const int ranks = static_cast<int>(node_gpus_from_context.size());
  auto context_gpu = [&](int rank) {
    const int gpu = rank >= 0 && rank < ranks ? node_gpus_from_context[rank] : -1;
    return gpu >= 0 && gpu < gpu_count ? gpu : -1;
  };
  const std::string by_local_rank = "GPU " + std::to_string(local_rank % gpu_count) +
                                    " assumed from local rank " + std::to_string(local_rank);
  const int mine = context_gpu(local_rank);
  if (mine < 0) {
    g.gpu = local_rank % gpu_count;
    g.why = by_local_rank + " (no CUDA context at MPI_Init)";
    return g;
  }
  bool all_on_mine = ranks > 1 && gpu_count > 1;
  for (int r = 0; r < ranks && all_on_mine; ++r) all_on_mine = context_gpu(r) == mine;
  if (all_on_mine) {
    g.gpu = local_rank % gpu_count;
    g.why = by_local_rank + ": every rank's CUDA context was on GPU " + std::to_string(mine) +
            ", taken as a library's (libfabric's GPUDirect probe), not the application's choice";
    return g;
  }
  g.gpu = mine;
  g.why = "GPU " + std::to_string(mine) + " from this rank's CUDA context";
  return g;
}

NicChoice choose_node_rank_nic(const std::string& requested, const Topology& topo,
                               const std::vector<int>& node_gpus_from_context, int local_rank,
                               const std::vector<std::string>& offered) {
  const int gpu_count = static_cast<int>(topo.gpus.size());
  const RankGpu mine = choose_rank_gpu(node_gpus_from_context, local_rank, gpu_count);
  int sharer = 0, sharers = 0;
  for (int r = 0; r < static_cast<int>(node_gpus_from_context.size()); ++r) {
    const bool same = choose_rank_gpu(node_gpus_from_context, r, gpu_count).gpu == mine.gpu;
    sharers += same;
    if (r < local_rank) sharer += same;
  }
  NicChoice c = choose_nic(requested, topo, mine.gpu, sharer, sharers, offered);
  c.why += "; " + mine.why;
  return c;
}

int gpu_by_bus_id(const Topology& topo, const std::string& bus_id) {
  std::string want;
  for (char ch : bus_id) want += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  // "00000000:53:00.0" (CUDA) and "0000:53:00.0" (sysfs) name the same device.
  const size_t colon = want.find(':');
  if (colon != std::string::npos && colon > 4) want = want.substr(colon - 4);
  for (size_t g = 0; g < topo.gpus.size(); ++g) {
    if (topo.gpus[g].pci.bdf == want) return static_cast<int>(g);
  }
  return -1;
}

}  // namespace efacoll

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

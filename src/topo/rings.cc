#include "topo/rings.h"

#include <algorithm>
#include <functional>

namespace efacoll {
namespace {

bool nvlinked(const Topology& t, int a, int b) {
  const std::vector<int>& p = t.gpus[a].nvlink_peers;
  return std::find(p.begin(), p.end(), b) != p.end();
}

// A Hamiltonian cycle over NVLink edges from GPU 0, trying lower indices first (so a full mesh
// gives 0, 1, ..., n-1). Nodes have at most 8 or 16 GPUs: the search is small.
bool nvlink_cycle(const Topology& t, std::vector<int>* order) {
  const int n = static_cast<int>(t.gpus.size());
  std::vector<bool> used(n, false);
  order->assign(1, 0);
  used[0] = true;
  std::function<bool()> extend = [&]() -> bool {
    const int last = order->back();
    if (static_cast<int>(order->size()) == n) return n < 3 || nvlinked(t, last, 0);
    for (int next = 0; next < n; ++next) {
      if (used[next] || !nvlinked(t, last, next)) continue;
      used[next] = true;
      order->push_back(next);
      if (extend()) return true;
      order->pop_back();
      used[next] = false;
    }
    return false;
  };
  return extend();
}

}  // namespace

GpuRing intra_node_ring(const Topology& topo) {
  GpuRing ring;
  const int n = static_cast<int>(topo.gpus.size());
  if (n == 0) return ring;
  ring.all_nvlink = n > 1 && nvlink_cycle(topo, &ring.order);
  if (!ring.all_nvlink) {
    ring.order.resize(n);
    for (int g = 0; g < n; ++g) ring.order[g] = g;  // GPUs are numbered in PCI order
  }
  for (int i = 0; i < n; ++i) {
    const int a = ring.order[i], b = ring.order[(i + 1) % n];
    ring.hop.push_back(nvlinked(topo, a, b)
                           ? "NVLink"
                           : path_type_name(pci_distance(topo.gpus[a].pci, topo.gpus[b].pci)));
  }
  return ring;
}

std::string GpuRing::describe() const {
  std::string s;
  for (size_t i = 0; i < order.size(); ++i) {
    s += "GPU" + std::to_string(order[i]) + " -" + hop[i] + "- ";
  }
  return order.empty() ? "no GPU" : s + "GPU" + std::to_string(order[0]);
}

}  // namespace efacoll

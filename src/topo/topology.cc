#include "topo/topology.h"

#include <algorithm>
#include <sstream>

#include "topo/nvlink_peers.h"
#include "topo/pci_tree.h"
#include "topo/rings.h"

namespace efacoll {
namespace {

constexpr unsigned kNvidia = 0x10de, kAmazon = 0x1d0f;

bool is_gpu_device(const PciDevice& d) {
  return d.vendor == kNvidia && (d.pci_class >> 16) == 0x03;
}

void attach_nvlinks(const NvlinkMap& links, std::vector<Gpu>* gpus) {
  std::set<int> on_switch;
  for (Gpu& g : *gpus) {
    auto it = links.find(g.pci.bdf);
    if (it == links.end()) continue;
    for (const std::string& peer : it->second) {
      if (peer == "nvswitch") on_switch.insert(g.index);
      for (const Gpu& other : *gpus) {
        if (other.pci.bdf == peer && other.index != g.index) g.nvlink_peers.push_back(other.index);
      }
    }
  }
  // GPUs on NVSwitches reach each other through them.
  for (int a : on_switch) {
    for (int b : on_switch) {
      auto& peers = (*gpus)[a].nvlink_peers;
      if (a != b && std::find(peers.begin(), peers.end(), b) == peers.end()) peers.push_back(b);
    }
  }
  for (Gpu& g : *gpus) std::sort(g.nvlink_peers.begin(), g.nvlink_peers.end());
}

}  // namespace

const char* path_type_name(PathType t) {
  switch (t) {
    case PathType::kPix:
      return "PIX";
    case PathType::kPxb:
      return "PXB";
    case PathType::kPhb:
      return "PHB";
    case PathType::kNode:
      return "NODE";
    case PathType::kSys:
      return "SYS";
  }
  return "?";
}

PathType pci_distance(const PciDevice& a, const PciDevice& b) {
  size_t common = 0;
  while (common < a.path.size() && common < b.path.size() && a.path[common] == b.path[common]) {
    ++common;
  }
  if (common == 0) return a.numa == b.numa ? PathType::kNode : PathType::kSys;
  if (common == 1) return PathType::kPhb;  // the same root complex, no switch in common
  // Siblings below one bridge port are one hop apart; anything else crosses several bridges.
  const bool siblings = common + 1 == a.path.size() && common + 1 == b.path.size();
  return siblings ? PathType::kPix : PathType::kPxb;
}

Topology detect_topology(const std::string& root) {
  Topology t;
  t.product = read_line(root + "/devices/virtual/dmi/id/product_name");
  for (const PciDevice& d : read_pci_devices(root)) {
    if (!is_gpu_device(d)) continue;
    Gpu g;
    g.index = static_cast<int>(t.gpus.size());
    g.pci = d;
    t.gpus.push_back(g);
  }
  for (const std::string& name : list_dir(root + "/class/infiniband")) {
    Nic n;
    n.name = name;
    if (!read_ib_device(root, name, &n.pci)) continue;
    // The libfabric EFA provider names its RDM domain after the device.
    n.domain = n.pci.vendor == kAmazon ? name + "-rdm" : name;
    t.nics.push_back(n);
  }
  const std::string fixture_links = root + "/efacoll-nvlink";
  attach_nvlinks(root == "/sys" ? nvlinks_from_nvml(nullptr) : nvlinks_from_file(fixture_links),
                 &t.gpus);

  for (const Gpu& g : t.gpus) {
    PathType best = PathType::kSys;
    for (const Nic& n : t.nics) best = std::min(best, pci_distance(g.pci, n.pci));
    std::vector<int> nearest;
    for (size_t i = 0; i < t.nics.size(); ++i) {
      if (pci_distance(g.pci, t.nics[i].pci) == best) nearest.push_back(static_cast<int>(i));
    }
    t.gpu_nics.push_back(nearest);
    t.gpu_nic_distance.push_back(best);
  }
  return t;
}

std::string Topology::describe() const {
  std::ostringstream out;
  out << "instance " << (product.empty() ? "unknown" : product) << ": " << gpus.size() << " GPUs, "
      << nics.size() << " RDMA NICs\n";
  for (const Gpu& g : gpus) {
    out << "GPU" << g.index << " " << g.pci.bdf << " NUMA " << g.pci.numa << " NVLink";
    if (g.nvlink_peers.empty()) out << " none";
    for (size_t i = 0; i < g.nvlink_peers.size(); ++i)
      out << (i ? "," : " GPU") << g.nvlink_peers[i];
    out << "; nearest NICs";
    const auto& nics_of = gpu_nics[g.index];
    if (nics_of.empty()) out << " none";
    for (int n : nics_of) out << " " << nics[n].name;
    if (!nics_of.empty()) out << " (" << path_type_name(gpu_nic_distance[g.index]) << ")";
    out << "\n";
  }
  for (const Nic& n : nics) {
    out << "NIC " << n.name << " " << n.pci.bdf << " NUMA " << n.pci.numa << " domain " << n.domain
        << "\n";
  }
  if (gpus.size() > 1) out << "ring " << intra_node_ring(*this).describe() << "\n";
  return out.str();
}

}  // namespace efacoll

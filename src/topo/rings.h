// The order in which a node's GPUs form a ring, as NCCL searches it: every hop over NVLink where
// the NVLink graph has such a cycle (any order under NVSwitch), otherwise the PCI order, which
// keeps GPUs under one switch or socket next to each other so that the ring crosses the slow
// links (root complex, socket interconnect) as few times as possible.
#pragma once
#include <string>
#include <vector>

#include "topo/topology.h"

namespace efacoll {

struct GpuRing {
  std::vector<int> order;        // GPU indices; the last one links back to the first
  std::vector<std::string> hop;  // hop[i]: order[i] -> order[i+1 mod n]: "NVLink" or a PCI path
  bool all_nvlink = false;
  std::string describe() const;  // "GPU0 -NVLink- GPU2 -NVLink- ... -NVLink- GPU0"
};

GpuRing intra_node_ring(const Topology& topo);

}  // namespace efacoll

// Which NICs (libfabric domains) a rank's endpoints open: those nearest to its GPU, as
// aws-ofi-nccl does. On p5 each GPU has four EFAs at PXB distance: a rank alone on its GPU
// stripes over all four; ranks sharing a GPU divide them (or, when they outnumber them, take
// them in turn). On p4d two GPUs share one EFA.
#pragma once
#include <string>
#include <vector>

#include "topo/topology.h"

namespace efacoll {

struct NicChoice {
  std::vector<std::string> domains;  // empty: the provider's first domain
  std::string why;                   // for the INFO line
};

// requested: EFACOLL_NIC ("auto", or domain names separated by commas). gpu: this rank's GPU in
// the topology's (PCI) order, or -1 when unknown. sharer / sharers: this rank's place among the
// node's ranks on the same GPU, and how many they are. offered: the provider's domains (a NIC
// it does not drive, such as an InfiniBand card beside EFA, is never chosen).
NicChoice choose_nic(const std::string& requested, const Topology& topo, int gpu, int sharer,
                     int sharers, const std::vector<std::string>& offered);

// The topology index of the GPU with this PCI address (any case, with or without the domain
// part), or -1.
int gpu_by_bus_id(const Topology& topo, const std::string& bus_id);

}  // namespace efacoll

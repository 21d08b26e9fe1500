// Which NIC (libfabric domain) a rank's endpoint opens: the one nearest to its GPU, as
// aws-ofi-nccl does. On p5 each GPU has four EFAs at PIX distance; ranks sharing a GPU take its
// nearest NICs in turn. On p4d two GPUs share one EFA.
#pragma once
#include <string>
#include <vector>

#include "topo/topology.h"

namespace efacoll {

struct NicChoice {
  std::string domain;  // empty: the provider's first domain
  std::string why;     // for the INFO line
};

// requested: EFACOLL_NIC ("auto" or a domain name). gpu: this rank's GPU in the topology's
// (PCI) order, or -1 when unknown. gpu_sharers_before: ranks of this node on the same GPU with
// a lower local rank. offered: the provider's domains (a NIC it does not drive, such as an
// InfiniBand card beside EFA, is never chosen).
NicChoice choose_nic(const std::string& requested, const Topology& topo, int gpu,
                     int gpu_sharers_before, const std::vector<std::string>& offered);

// The topology index of the GPU with this PCI address (any case, with or without the domain
// part), or -1.
int gpu_by_bus_id(const Topology& topo, const std::string& bus_id);

}  // namespace efacoll

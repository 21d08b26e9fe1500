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

// The GPU a rank of a node is taken to use, as a topology index (-1: none), and why.
struct RankGpu {
  int gpu = -1;
  std::string why;  // for the INFO line
};

// node_gpus_from_context: for every rank of the node, by local rank, the topology index of the
// GPU its current CUDA context named at MPI_Init (-1: no context, or a GPU the topology lacks);
// gpu_count: the node's GPUs in the topology.
// - A rank without a context takes local rank modulo gpu_count, the launcher convention of codes
//   that pick their device after MPI_Init.
// - Where the node has several GPUs and several ranks, and every rank's context names the same
//   GPU, every rank takes its local rank instead: such contexts are a library's, not the
//   application's (libfabric's efa probes GPUDirect with an allocation on the current device,
//   which makes device 0 current in a process that had no context). Deliberately sharing one
//   GPU of several costs only the NICs' nearness; EFACOLL_NIC names NICs outright.
// - Otherwise the context names the rank's GPU: ranks that chose distinct GPUs, or that share
//   the one GPU of their machine.
// Every rank passes the same vector, so the ranks of a node agree on each other's GPUs.
RankGpu choose_rank_gpu(const std::vector<int>& node_gpus_from_context, int local_rank,
                        int gpu_count);

// One rank's NICs from the node's gathered contexts: its GPU (choose_rank_gpu), its place among
// the node's ranks on that GPU, and choose_nic with them; `why` gives both choices.
NicChoice choose_node_rank_nic(const std::string& requested, const Topology& topo,
                               const std::vector<int>& node_gpus_from_context, int local_rank,
                               const std::vector<std::string>& offered);

// The topology index of the GPU with this PCI address (any case, with or without the domain
// part), or -1.
int gpu_by_bus_id(const Topology& topo, const std::string& bus_id);

}  // namespace efacoll

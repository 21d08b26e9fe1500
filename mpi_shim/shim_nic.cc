// Which NIC this rank's endpoint opens: the one nearest to its GPU (topo/nic_choice.h). The GPU
// is the one the process has made current already, else local rank modulo the node's GPUs (the
// launcher convention codes follow when they pick their device after MPI_Init).
#include "common/log.h"
#include "mpi_shim/shim.h"
#include "topo/nic_choice.h"

namespace efacoll {
namespace shim {

// Collective over MPI_COMM_WORLD (ranks of a node compare their GPUs).
NicChoice choose_rank_nic(const std::string& requested, const std::vector<std::string>& offered,
                          const Topology& topo) {
  MPI_Comm node;
  int local_rank = 0, local_size = 1;
  PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  PMPI_Comm_rank(node, &local_rank);
  PMPI_Comm_size(node, &local_size);
  int gpu = -1;
  std::string bus_id;
  if (current_gpu_bus_id(&bus_id)) {
    gpu = gpu_by_bus_id(topo, bus_id);
  } else if (!topo.gpus.empty()) {
    gpu = local_rank % static_cast<int>(topo.gpus.size());
  }
  std::vector<int> gpus(local_size);
  PMPI_Allgather(&gpu, 1, MPI_INT, gpus.data(), 1, MPI_INT, node);
  PMPI_Comm_free(&node);
  int sharer = 0, sharers = 0;
  for (int r = 0; r < local_size; ++r) {
    sharers += gpus[r] == gpu;
    if (r < local_rank) sharer += gpus[r] == gpu;
  }
  NicChoice c = choose_nic(requested, topo, gpu, sharer, sharers, offered);
  if (!bus_id.empty() && gpu >= 0) c.why += "; GPU from the current CUDA context";
  if (bus_id.empty() && gpu >= 0) c.why += "; GPU assumed from the local rank";
  return c;
}

}  // namespace shim
}  // namespace efacoll

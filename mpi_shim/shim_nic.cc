// Which NIC this rank's endpoint opens: the one nearest to its GPU (topo/nic_choice.h). The GPU
// is the one the rank's CUDA context names, unless the node's contexts look like a library's
// rather than the application's choice (choose_rank_gpu), else local rank modulo the node's GPUs
// (the launcher convention codes follow when they pick their device after MPI_Init).
#include "gpu/memory_kind.h"
#include "mpi_shim/shim.h"
#include "topo/nic_choice.h"

namespace efacoll {
namespace shim {

// The PCI address of the GPU that this thread's current CUDA context names ("" when none),
// looked up at the first call and remembered. That call belongs before anything initialises
// libfabric (the host MPI's PMPI_Init included): efa's GPUDirect probe allocates on the current
// device, and so makes device 0's context current in a process that had none. A first call
// after that still works: choose_rank_gpu tells such contexts apart when every rank has one.
// Loads the CUDA driver (cuInit) where there is one; creates no context.
const std::string& rank_gpu_from_context() {
  static const std::string bus_id = [] {
    std::string id;
    return current_gpu_bus_id(&id) ? id : std::string();
  }();
  return bus_id;
}

// Collective over MPI_COMM_WORLD: the ranks of a node gather their contexts' GPUs, and each
// applies the same rule to the same vector, so they agree on who shares which GPU.
NicChoice choose_rank_nic(const std::string& requested, const std::vector<std::string>& offered,
                          const Topology& topo) {
  MPI_Comm node;
  int local_rank = 0, local_size = 1;
  PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  PMPI_Comm_rank(node, &local_rank);
  PMPI_Comm_size(node, &local_size);
  const std::string& bus_id = rank_gpu_from_context();
  const int context_gpu = bus_id.empty() ? -1 : gpu_by_bus_id(topo, bus_id);
  std::vector<int> node_gpus_from_context(local_size);
  PMPI_Allgather(&context_gpu, 1, MPI_INT, node_gpus_from_context.data(), 1, MPI_INT, node);
  PMPI_Comm_free(&node);
  return choose_node_rank_nic(requested, topo, node_gpus_from_context, local_rank, offered);
}

}  // namespace shim
}  // namespace efacoll

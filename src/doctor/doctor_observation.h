// What efacoll-doctor looked at, as plain data. The checks are pure functions of it, so tests
// feed fixture sysfs trees, made-up environments and made-up provider lists: no libfabric, no MPI.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/params.h"
#include "topo/topology.h"

namespace efacoll {
namespace doctor {

// A GPU buffer registered through an endpoint of the provider (policy/gdr_trial.h), as MPI_Init
// does before it trusts FI_HMEM: fi_getinfo's FI_HMEM alone proves nothing.
struct GpuTrialFact {
  bool tried = false;
  bool ok = false;
  std::string detail;  // ok: how it registered ("dma-buf", "address"); else what failed, or
                       // why it was not tried
};

// What fi_getinfo says of one provider.
struct ProviderProbe {
  std::string name;       // as asked: "efa", "tcp"
  bool found = false;     // fi_getinfo returned an RDM tagged endpoint for it
  std::string prov_name;  // as libfabric names it: "tcp;ofi_rxm"
  bool rma = false;       // FI_RMA: efacoll's one-sided protocol is possible
  bool hmem = false;      // FI_HMEM offered: device memory claimed (GPUDirect RDMA on EFA)
  std::vector<std::string> domains;
  GpuTrialFact gpu_trial;  // where hmem: whether GPU memory really registers
};

struct FabricFacts {
  std::string version;   // "1.17" from fi_version(); empty: unknown
  std::string path;      // the libfabric shared object actually loaded
  std::string aws_path;  // a libfabric under /opt/amazon/efa, where AWS's installer put one
  std::vector<std::string> offered;  // every RDM tagged provider, as libfabric lists them
  ProviderProbe efa;                 // always asked, with FI_HMEM
  ProviderProbe requested;           // EFACOLL_PROVIDER when it names another provider
};

// Read from a sysfs-shaped tree and a /dev-shaped tree (fixtures in tests, a container's view).
struct NodeFacts {
  std::string sysfs_root = "/sys";
  std::string dev_root = "/dev";
  Topology topo;
  std::vector<std::string> efa_devices;     // Amazon-vendor InfiniBand devices
  std::vector<std::string> ib_devices;      // every InfiniBand device
  std::vector<std::string> net_interfaces;  // <sysfs>/class/net
  bool dev_infiniband = false;              // <dev>/infiniband exists
  int uverbs = 0;                           // <dev>/infiniband/uverbs* entries
  bool dev_nvidia = false;                  // <dev>/nvidiactl exists (NVIDIA driver reachable)
};

constexpr uint64_t kUnlimited = UINT64_MAX;

struct Observation {
  std::string host;
  std::string kernel;  // uname -r
  EnvMap env;
  NodeFacts node;
  FabricFacts fabric;
  std::string mpi_version;        // MPI_Get_library_version; empty: unknown
  uint64_t memlock = kUnlimited;  // RLIMIT_MEMLOCK (soft), bytes
};

}  // namespace doctor
}  // namespace efacoll

// What the node is made of, as NCCL sees it: GPUs and NICs, where they hang in the PCI tree,
// their NUMA nodes, NVLink peers, and which NICs are nearest to each GPU. Read from sysfs, or
// from a fixture tree laid out like sysfs (tests describe p4d and p5 that way).
#pragma once
#include <string>
#include <vector>

namespace efacoll {

struct PciDevice {
  std::string bdf;                // 0000:53:00.0
  std::vector<std::string> path;  // root complex first, the device last
  unsigned vendor = 0, device = 0, pci_class = 0;
  int numa = -1;
};

// From nearest to farthest, NCCL's names: a PCIe switch port (PIX), several switches (PXB),
// the same root complex (PHB), the same NUMA node (NODE), across sockets (SYS).
enum class PathType { kPix, kPxb, kPhb, kNode, kSys };
const char* path_type_name(PathType t);
PathType pci_distance(const PciDevice& a, const PciDevice& b);

struct Gpu {
  int index = 0;  // in PCI order, as CUDA_DEVICE_ORDER=PCI_BUS_ID numbers them
  PciDevice pci;
  std::vector<int> nvlink_peers;  // indices of GPUs joined by NVLink
};

struct Nic {
  std::string name;    // the InfiniBand device, e.g. rdmap79s0
  std::string domain;  // its libfabric EFA domain, e.g. rdmap79s0-rdm
  PciDevice pci;
};

struct Topology {
  std::string product;  // EC2 instance type, when known
  std::vector<Gpu> gpus;
  std::vector<Nic> nics;
  // Per GPU: the NICs at the smallest PCI distance (p5: four; p4d: one, shared by two GPUs).
  std::vector<std::vector<int>> gpu_nics;
  std::vector<PathType> gpu_nic_distance;

  std::string describe() const;
};

// sysfs_root: "/sys" on a real machine. NVLink peers come from NVML on a real machine, and from
// the fixture file <root>/efacoll-nvlink ("bdf: peer-bdf peer-bdf ...") in a fixture tree.
Topology detect_topology(const std::string& sysfs_root);

}  // namespace efacoll

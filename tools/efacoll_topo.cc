// Prints what efacoll detects about this node (or a sysfs-shaped fixture tree): GPUs, RDMA NICs,
// NVLink peers and each GPU's nearest NICs.
//   efacoll_topo [SYSFS_ROOT]      default /sys
#include <cstdio>

#include "topo/topology.h"

int main(int argc, char** argv) {
  const char* root = argc > 1 ? argv[1] : "/sys";
  std::fputs(efacoll::detect_topology(root).describe().c_str(), stdout);
  return 0;
}

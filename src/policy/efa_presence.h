// Whether this host has EFA devices, read from sysfs without touching libfabric (libfabric
// reads FI_PROVIDER once, at its first call, and steering may still have to set it).
#pragma once
#include <string>
#include <vector>

namespace efacoll {

// Names of InfiniBand-class devices whose PCI vendor is Amazon (0x1d0f) under `sysfs_root`
// (normally "/sys"; tests pass a fixture tree).
std::vector<std::string> efa_devices(const std::string& sysfs_root);

}  // namespace efacoll

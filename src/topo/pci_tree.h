// Reading PCI devices out of a sysfs-shaped tree.
#pragma once
#include <string>
#include <vector>

#include "topo/topology.h"

namespace efacoll {

// Every device under <root>/bus/pci/devices, its path resolved through the symlink.
std::vector<PciDevice> read_pci_devices(const std::string& root);
// The PCI device behind <root>/class/infiniband/<name>/device; false when absent.
bool read_ib_device(const std::string& root, const std::string& name, PciDevice* out);
std::vector<std::string> list_dir(const std::string& dir);
std::string read_line(const std::string& file);

}  // namespace efacoll

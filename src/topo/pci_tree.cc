#include "topo/pci_tree.h"

#include <dirent.h>
#include <limits.h>
#include <stdlib.h>

#include <algorithm>
#include <fstream>

namespace efacoll {

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (!d) return names;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

std::string read_line(const std::string& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

namespace {

unsigned read_hex(const std::string& file) {
  std::string s = read_line(file);
  return s.empty() ? 0 : static_cast<unsigned>(std::strtoul(s.c_str(), nullptr, 16));
}

// A PCI device directory's resolved path, cut to the components from the root complex
// ("pci0000:44") to the device itself.
std::vector<std::string> pci_path(const std::string& device_dir) {
  char resolved[PATH_MAX];
  std::vector<std::string> parts;
  if (!realpath(device_dir.c_str(), resolved)) return parts;
  std::string p = resolved;
  size_t start = 0;
  bool in_tree = false;
  while (start <= p.size()) {
    size_t slash = p.find('/', start);
    std::string part =
        p.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (part.rfind("pci", 0) == 0 && part.find(':') != std::string::npos) in_tree = true;
    if (in_tree && !part.empty()) parts.push_back(part);
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return parts;
}

PciDevice read_device(const std::string& dir, const std::string& bdf) {
  PciDevice d;
  d.bdf = bdf;
  d.path = pci_path(dir);
  d.vendor = read_hex(dir + "/vendor");
  d.device = read_hex(dir + "/device");
  d.pci_class = read_hex(dir + "/class");
  std::string numa = read_line(dir + "/numa_node");
  d.numa = numa.empty() ? -1 : std::atoi(numa.c_str());
  return d;
}

}  // namespace

std::vector<PciDevice> read_pci_devices(const std::string& root) {
  std::vector<PciDevice> devices;
  const std::string dir = root + "/bus/pci/devices";
  for (const std::string& bdf : list_dir(dir)) devices.push_back(read_device(dir + "/" + bdf, bdf));
  return devices;
}

bool read_ib_device(const std::string& root, const std::string& name, PciDevice* out) {
  const std::string dir = root + "/class/infiniband/" + name + "/device";
  std::vector<std::string> path = pci_path(dir);
  if (path.empty()) return false;
  *out = read_device(dir, path.back());
  return true;
}

}  // namespace efacoll

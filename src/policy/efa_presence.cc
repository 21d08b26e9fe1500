#include "policy/efa_presence.h"

#include <dirent.h>

#include <fstream>

namespace efacoll {

std::vector<std::string> efa_devices(const std::string& sysfs_root) {
  std::vector<std::string> found;
  const std::string dir = sysfs_root + "/class/infiniband";
  DIR* d = opendir(dir.c_str());
  if (!d) return found;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    std::ifstream vendor(dir + "/" + name + "/device/vendor");
    std::string v;
    if (vendor >> v && v == "0x1d0f") found.push_back(name);
  }
  closedir(d);
  return found;
}

}  // namespace efacoll

#include "topo/nvlink_peers.h"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

namespace efacoll {
namespace {

// The parts of nvml.h we need (its ABI is stable; no header needed to build).
struct NvmlPciInfo {
  char bus_id_legacy[16];
  unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
};
using NvmlDevice = void*;
constexpr unsigned kNvmlMaxLinks = 18;

struct Nvml {
  int (*init)() = nullptr;
  int (*shutdown)() = nullptr;
  int (*count)(unsigned*) = nullptr;
  int (*by_index)(unsigned, NvmlDevice*) = nullptr;
  int (*pci_info)(NvmlDevice, NvmlPciInfo*) = nullptr;
  int (*link_state)(NvmlDevice, unsigned, int*) = nullptr;
  int (*remote_pci)(NvmlDevice, unsigned, NvmlPciInfo*) = nullptr;
};

template <typename F>
bool load(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  return *out != nullptr;
}

}  // namespace

std::string normalize_bdf(const std::string& bdf) {
  std::string s = bdf;
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  // NVML pads the domain to eight digits; sysfs uses four.
  return s.size() > 12 ? s.substr(s.size() - 12) : s;
}

NvlinkMap nvlinks_from_nvml(std::string* why_not) {
  NvlinkMap links;
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    if (why_not) *why_not = "libnvidia-ml.so.1 not found";
    return links;
  }
  Nvml n;
  if (!load(lib, "nvmlInit_v2", &n.init) || !load(lib, "nvmlShutdown", &n.shutdown) ||
      !load(lib, "nvmlDeviceGetCount_v2", &n.count) ||
      !load(lib, "nvmlDeviceGetHandleByIndex_v2", &n.by_index) ||
      !load(lib, "nvmlDeviceGetPciInfo_v3", &n.pci_info) ||
      !load(lib, "nvmlDeviceGetNvLinkState", &n.link_state) ||
      !load(lib, "nvmlDeviceGetNvLinkRemotePciInfo_v2", &n.remote_pci)) {
    if (why_not) *why_not = "libnvidia-ml.so.1 lacks the NVLink queries";
    dlclose(lib);
    return links;
  }
  if (n.init() != 0) {
    if (why_not) *why_not = "nvmlInit failed";
    dlclose(lib);
    return links;
  }
  std::map<std::string, bool> is_gpu;
  unsigned count = 0;
  n.count(&count);
  std::vector<std::pair<std::string, NvmlDevice>> devices;
  for (unsigned i = 0; i < count; ++i) {
    NvmlDevice d = nullptr;
    NvmlPciInfo pci = {};
    if (n.by_index(i, &d) != 0 || n.pci_info(d, &pci) != 0) continue;
    devices.emplace_back(normalize_bdf(pci.bus_id), d);
    is_gpu[devices.back().first] = true;
  }
  for (auto& [bdf, d] : devices) {
    for (unsigned link = 0; link < kNvmlMaxLinks; ++link) {
      int active = 0;
      NvmlPciInfo remote = {};
      if (n.link_state(d, link, &active) != 0 || !active) continue;
      if (n.remote_pci(d, link, &remote) != 0) continue;
      std::string peer = normalize_bdf(remote.bus_id);
      links[bdf].insert(is_gpu.count(peer) ? peer : "nvswitch");
    }
  }
  n.shutdown();
  dlclose(lib);
  return links;
}

NvlinkMap nvlinks_from_file(const std::string& path) {
  NvlinkMap links;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    size_t colon = line.find(": ");
    if (colon == std::string::npos) continue;
    std::istringstream peers(line.substr(colon + 2));
    auto& set = links[normalize_bdf(line.substr(0, colon))];
    for (std::string p; peers >> p;) set.insert(p == "nvswitch" ? p : normalize_bdf(p));
  }
  return links;
}

}  // namespace efacoll

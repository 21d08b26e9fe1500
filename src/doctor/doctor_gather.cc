#include "doctor/doctor_gather.h"

#include <dlfcn.h>
#include <glob.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>

#include "doctor/doctor_checks.h"
#include "gpu/gpu_runtime.h"
#include "gpu/memory_kind.h"
#include "policy/efa_presence.h"
#include "policy/gdr_trial.h"
#include "topo/pci_tree.h"
#include "transport/fabric/fabric_info.h"
#include "transport/fabric/fabric_transport.h"

namespace efacoll {
namespace doctor {
namespace {

// Registers a GPU buffer through an endpoint of `name` opened with FI_HMEM, on the GPU a rank of
// this local rank would try at MPI_Init.
GpuTrialFact try_gpu(const std::string& name, int local_rank) {
  GpuTrialFact fact;
  std::string why_not;
  std::unique_ptr<GpuRuntime> gpu = make_gpu_runtime(&why_not);
  if (!gpu) {
    fact.detail = "no usable GPU runtime: " + why_not;
    return fact;
  }
  const int device = trial_device(-1, std::max(local_rank, 0), cuda_device_count());
  FabricOptions options;  // as MPI_Init opens it
  std::string by_address;
  register_gpu_memory_by_dmabuf(device, &options, &by_address);
  FiInfoPtr info;
  std::unique_ptr<Transport> transport;
  Status st = find_provider(name, &info, true);
  if (st.is_ok()) st = open_fabric_transport(info.get(), options, &transport);
  if (!st.is_ok()) {
    fact.detail = "no FI_HMEM endpoint opened: " + st.message();
    return fact;
  }
  GpuRegistrationTrial trial = try_gpu_registration(transport.get(), gpu.get(), device);
  fact.tried = true;
  fact.ok = trial.ok;
  fact.detail = trial.ok ? trial.how : "device " + std::to_string(device) + ": " + trial.error;
  return fact;
}

ProviderProbe probe(const std::string& name, bool hmem, int local_rank) {
  ProviderProbe p;
  p.name = name;
  FiInfoPtr info;
  if (!find_provider(name, &info, hmem).is_ok()) return p;
  p.found = true;
  p.prov_name = info->fabric_attr->prov_name ? info->fabric_attr->prov_name : "";
  p.rma = (info->caps & FI_RMA) != 0;
  p.hmem = (info->caps & FI_HMEM) != 0;
  p.domains = offered_domains(name);
  if (p.hmem) p.gpu_trial = try_gpu(name, local_rank);
  return p;
}

// The shared object fi_getinfo came from: the libfabric this process really uses. The resolved
// path where it leads into AWS's tree (a symlink elsewhere may point there).
std::string loaded_libfabric() {
  Dl_info info;
  if (!dladdr(reinterpret_cast<void*>(&fi_getinfo), &info) || !info.dli_fname) return "";
  char resolved[PATH_MAX];
  if (realpath(info.dli_fname, resolved) && std::string(resolved).rfind("/opt/amazon/efa/", 0) == 0)
    return resolved;
  return info.dli_fname;
}

std::string aws_libfabric() {
  glob_t g;
  std::string found;
  if (glob("/opt/amazon/efa/lib*/libfabric.so*", 0, nullptr, &g) == 0 && g.gl_pathc > 0) {
    found = g.gl_pathv[0];
  }
  globfree(&g);
  return found;
}

}  // namespace

NodeFacts observe_node(const std::string& sysfs_root, const std::string& dev_root) {
  NodeFacts n;
  n.sysfs_root = sysfs_root;
  n.dev_root = dev_root;
  n.topo = detect_topology(sysfs_root);
  n.efa_devices = efa_devices(sysfs_root);
  std::sort(n.efa_devices.begin(), n.efa_devices.end());
  n.ib_devices = list_dir(sysfs_root + "/class/infiniband");
  n.net_interfaces = list_dir(sysfs_root + "/class/net");
  struct stat st;
  n.dev_infiniband = stat((dev_root + "/infiniband").c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  for (const std::string& name : list_dir(dev_root + "/infiniband")) {
    if (name.rfind("uverbs", 0) == 0) ++n.uverbs;
  }
  n.dev_nvidia = access((dev_root + "/nvidiactl").c_str(), F_OK) == 0;
  return n;
}

FabricFacts observe_fabric(const std::string& requested, int local_rank) {
  FabricFacts f;
  f.version = fabric_library_version();
  f.path = loaded_libfabric();
  f.aws_path = aws_libfabric();
  f.offered = offered_providers();
  f.efa = probe("efa", true, local_rank);
  if (requested != "efa") f.requested = probe(requested, true, local_rank);
  return f;
}

Observation observe(const std::string& sysfs_root, const std::string& dev_root, const EnvMap& env) {
  Observation obs;
  char host[HOST_NAME_MAX + 1] = "";
  if (gethostname(host, sizeof(host)) == 0) obs.host = host;
  utsname u;
  if (uname(&u) == 0) obs.kernel = u.release;
  obs.env = env;
  obs.node = observe_node(sysfs_root, dev_root);
  obs.fabric = observe_fabric(requested_provider(env), launcher_local_rank(env));
  rlimit lim;
  if (getrlimit(RLIMIT_MEMLOCK, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
    obs.memlock = lim.rlim_cur;
  }
  return obs;
}

int launcher_local_rank(const EnvMap& env) {
  for (const char* name :
       {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK",
        "PALS_LOCAL_RANKID", "SLURM_LOCALID", "PMI_RANK"}) {
    auto it = env.find(name);
    if (it != env.end() && !it->second.empty()) return std::atoi(it->second.c_str());
  }
  return -1;
}

}  // namespace doctor
}  // namespace efacoll

// instance, gpus, gpuN, devices, memlock: what the node offers and what a container hides.
#include <cstdio>

#include "doctor/doctor_checks.h"
#include "policy/gdr_policy.h"

namespace efacoll {
namespace doctor {
namespace {

constexpr char kContainerFix[] =
    "docker run --device=/dev/infiniband (or --device /dev/infiniband/uverbsN per EFA); on EKS "
    "the EFA device plugin (aws-efa-k8s-device-plugin) with a vpc.amazonaws.com/efa request";

// "GPU1-3,5": indices as ranges.
std::string gpu_ranges(const std::vector<int>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    out += (out.empty() ? "GPU" : ",") + std::to_string(ids[i]);
    if (j > i) out += "-" + std::to_string(ids[j]);
    i = j + 1;
  }
  return out.empty() ? "none" : out;
}

std::string bytes_text(uint64_t bytes) {
  if (bytes >= (1ull << 30)) return std::to_string(bytes >> 30) + " GiB";
  if (bytes >= (1ull << 20)) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes >> 10) + " KiB";
}

Check instance_check(const Observation& obs) {
  const std::string& product = obs.node.topo.product;
  std::string finding =
      product.empty() ? "instance type unknown (no DMI product name: not EC2, or hidden)"
                      : product + (instance_expects_gdr(product) ? " (has GPUDirect RDMA)" : "");
  if (!obs.kernel.empty()) finding += ", kernel " + obs.kernel;
  return {"instance", Verdict::kInfo, finding, ""};
}

Check gpus_check(const Observation& obs) {
  const Topology& topo = obs.node.topo;
  if (topo.gpus.empty()) {
    return {"gpus", Verdict::kInfo, "no GPU (no NVIDIA GPU on the PCI bus)", ""};
  }
  char model[32];
  std::snprintf(model, sizeof(model), "NVIDIA %04x:%04x", topo.gpus[0].pci.vendor,
                topo.gpus[0].pci.device);
  std::string finding = std::to_string(topo.gpus.size()) + " GPU" +
                        (topo.gpus.size() == 1 ? "" : "s") + " (" + model + ")";
  if (!obs.node.dev_nvidia) {
    return {"gpus", Verdict::kWarn,
            finding + " on the PCI bus but no " + obs.node.dev_root +
                "/nvidiactl: the NVIDIA driver is not loaded, or the container has no GPUs",
            "docker run --gpus all (NVIDIA Container Toolkit); on EKS request nvidia.com/gpu; on "
            "the host check nvidia-smi"};
  }
  bool any_nvlink = false;
  for (const Gpu& g : topo.gpus) any_nvlink = any_nvlink || !g.nvlink_peers.empty();
  if (topo.gpus.size() > 1 && !any_nvlink) {
    finding += "; no NVLink peers found (PCIe-only GPUs, or NVML unavailable)";
  }
  return {"gpus", Verdict::kOk, finding, ""};
}

Check gpu_check(const Topology& topo, const Gpu& g) {
  const std::vector<int>& near = topo.gpu_nics[g.index];
  std::string finding = g.pci.bdf + " NUMA " + std::to_string(g.pci.numa) + "; nearest NIC";
  std::vector<std::string> names;
  for (int n : near) names.push_back(topo.nics[n].name);
  finding += (names.size() == 1 ? " " : "s ") + join(names);
  if (!near.empty()) {
    finding += std::string(" (") + path_type_name(topo.gpu_nic_distance[g.index]) + ")";
  }
  finding += "; NVLink " + gpu_ranges(g.nvlink_peers);
  const std::string name = "gpu" + std::to_string(g.index);
  if (near.empty()) return {name, Verdict::kInfo, finding, ""};
  if (topo.gpu_nic_distance[g.index] == PathType::kSys && topo.nics.size() > 1) {
    return {name, Verdict::kWarn,
            finding + ": every NIC is across the CPU interconnect (no GPUDirect, lower bandwidth)",
            "nothing to set; bind this GPU's ranks to NUMA node " + std::to_string(g.pci.numa) +
                " (mpirun --bind-to numa) and expect less"};
  }
  return {name, Verdict::kOk, finding, ""};
}

// EFA in sysfs (not namespaced) but not in /dev: a container started without the devices.
Check devices_check(const NodeFacts& node) {
  const size_t efa = node.efa_devices.size();
  const std::string ib = node.dev_root + "/infiniband";
  if (!node.dev_infiniband || node.uverbs == 0) {
    return {"devices", Verdict::kFail,
            "container without the EFA devices: " + std::to_string(efa) + " EFA in " +
                node.sysfs_root + "/class/infiniband but " + ib +
                (node.dev_infiniband ? " has no uverbs device" : " is missing"),
            kContainerFix};
  }
  if (static_cast<size_t>(node.uverbs) < efa) {
    return {"devices", Verdict::kWarn,
            "only " + std::to_string(node.uverbs) + " uverbs devices in " + ib + " for " +
                std::to_string(efa) + " EFA devices: this container reaches only some of them",
            kContainerFix};
  }
  return {"devices", Verdict::kOk,
          ib + ": uverbs " + std::to_string(node.uverbs) + ", EFA devices " + std::to_string(efa),
          ""};
}

Check memlock_check(const Observation& obs) {
  if (obs.memlock == kUnlimited) return {"memlock", Verdict::kOk, "RLIMIT_MEMLOCK unlimited", ""};
  return {"memlock", Verdict::kWarn,
          "RLIMIT_MEMLOCK is " + bytes_text(obs.memlock) +
              ": EFA registrations pin memory and fail past it",
          "ulimit -l unlimited (limits.conf: '* - memlock unlimited'); containers: docker run "
          "--ulimit memlock=-1:-1"};
}

}  // namespace

void check_node(const Observation& obs, Checks* out) {
  out->push_back(instance_check(obs));
  out->push_back(gpus_check(obs));
  for (const Gpu& g : obs.node.topo.gpus) out->push_back(gpu_check(obs.node.topo, g));
  // Without EFA neither the device files nor locked memory matter to efacoll.
  if (obs.node.efa_devices.empty()) return;
  out->push_back(devices_check(obs.node));
  out->push_back(memlock_check(obs));
}

}  // namespace doctor
}  // namespace efacoll

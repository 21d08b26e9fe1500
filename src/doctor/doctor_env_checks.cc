// Environment hazards known from the field: interface settings naming interfaces this node lacks,
// huge pages and fork() with EFA, rdma-core's fork protection, and efacoll's own parameters.
#include <cstdio>

#include "doctor/doctor_checks.h"
#include "doctor/doctor_ifname.h"
#include "policy/fork_safety.h"

namespace efacoll {
namespace doctor {
namespace {

enum class IfaceSyntax { kNccl, kNames, kUcx, kEfa };

struct IfaceSetting {
  const char* var;
  IfaceSyntax syntax;
  const char* user;  // who reads it
};

constexpr IfaceSetting kIfaceSettings[] = {
    {"NCCL_SOCKET_IFNAME", IfaceSyntax::kNccl, "NCCL"},
    {"GLOO_SOCKET_IFNAME", IfaceSyntax::kNames, "Gloo (PyTorch)"},
    {"FI_TCP_IFACE", IfaceSyntax::kNames, "libfabric's tcp provider"},
    {"FI_SOCKETS_IFACE", IfaceSyntax::kNames, "libfabric's sockets provider"},
    {"OMPI_MCA_btl_tcp_if_include", IfaceSyntax::kNames, "Open MPI's TCP BTL"},
    {"OMPI_MCA_oob_tcp_if_include", IfaceSyntax::kNames, "Open MPI's launcher"},
    {"I_MPI_HYDRA_IFACE", IfaceSyntax::kNames, "Intel MPI's launcher"},
    {"HYDRA_IFACE", IfaceSyntax::kNames, "MPICH's launcher"},
    {"UCX_NET_DEVICES", IfaceSyntax::kUcx, "UCX"},
    {"FI_EFA_IFACE", IfaceSyntax::kEfa, "libfabric's efa provider"},
};

// Variables whose presence says a fork-heavy program (PyTorch DataLoader workers) is likely.
constexpr const char* kForkHeavyPrefixes[] = {"TORCHELASTIC_", "PYTORCH_", "TORCH_NCCL_",
                                              "LOCAL_WORLD_SIZE"};

Check iface_check(const IfaceSetting& s, const std::string& value, const NodeFacts& node) {
  std::vector<std::string> here = node.net_interfaces;
  std::string names = value;
  if (s.syntax == IfaceSyntax::kEfa) here = node.efa_devices;
  if (s.syntax == IfaceSyntax::kUcx) {
    // "mlx5_0:1" is an InfiniBand device and port, "eth0" an interface.
    here.insert(here.end(), node.ib_devices.begin(), node.ib_devices.end());
    names.clear();
    for (const std::string& n : split_list(value)) names += n.substr(0, n.find(':')) + ",";
  }
  const IfaceMatch m =
      s.syntax == IfaceSyntax::kNccl ? match_nccl_ifname(names, here) : match_names(names, here);
  const std::string setting = std::string(s.var) + "=" + value;
  const std::string fix =
      "set " + std::string(s.var) + " to one of: " + join(here) + "; or unset it";
  if (!m.exclude && m.selected.empty()) {
    return {"iface", Verdict::kFail,
            setting + ": no such interface here (" + join(here) + "); " + s.user + " finds none",
            fix};
  }
  if (!m.exclude && !m.unmatched.empty()) {
    return {"iface", Verdict::kWarn,
            setting + ": " + join(m.unmatched) + " match no interface here; " + s.user + " uses " +
                join(m.selected),
            fix};
  }
  const bool only_loopback =
      m.selected.empty() || (m.selected.size() == 1 && m.selected[0] == "lo");
  if (m.exclude && only_loopback && s.syntax != IfaceSyntax::kEfa) {
    return {"iface", Verdict::kWarn,
            setting + ": leaves " + join(m.selected, "nothing") + " for " + s.user +
                ", which cannot reach other nodes",
            fix};
  }
  return {"iface", Verdict::kOk, setting + ": " + s.user + " uses " + join(m.selected), ""};
}

void iface_checks(const Observation& obs, Checks* out) {
  bool any = false;
  for (const IfaceSetting& s : kIfaceSettings) {
    if (!env_has(obs.env, s.var)) continue;
    any = true;
    out->push_back(iface_check(s, env_value(obs.env, s.var), obs.node));
  }
  if (!any) {
    out->push_back({"iface", Verdict::kInfo,
                    "no interface setting (NCCL_SOCKET_IFNAME, ...); interfaces here: " +
                        join(obs.node.net_interfaces),
                    ""});
  }
}

std::string fork_heavy_hint(const EnvMap& env) {
  for (const auto& kv : env) {
    for (const char* p : kForkHeavyPrefixes) {
      if (kv.first.rfind(p, 0) == 0) return kv.first;
    }
  }
  return "";
}

// EFA's bounce buffers on huge pages (FI_EFA_USE_HUGE_PAGE, default on unless fork-safe) make a
// later fork() fail with ENOMEM (efa-facts §4, §7).
Check huge_page_check(const EnvMap& env) {
  const std::string huge = env_value(env, "FI_EFA_USE_HUGE_PAGE");
  const bool fork_safe = truthy(env_value(env, "FI_EFA_FORK_SAFE"));
  const std::string fix =
      "FI_EFA_USE_HUGE_PAGE=0 for programs that fork, e.g. PyTorch "
      "DataLoader workers";
  if (fork_safe && truthy(huge)) {
    return {"hugepages", Verdict::kFail,
            "FI_EFA_FORK_SAFE=1 with FI_EFA_USE_HUGE_PAGE=" + huge + ": libfabric's efa aborts",
            "unset FI_EFA_USE_HUGE_PAGE (fork-safe mode turns huge pages off)"};
  }
  if (!huge.empty() && !truthy(huge)) {
    return {"hugepages", Verdict::kOk, "FI_EFA_USE_HUGE_PAGE=" + huge + ": fork() is safe", ""};
  }
  if (fork_safe) return {"hugepages", Verdict::kOk, "FI_EFA_FORK_SAFE=1: huge pages off", ""};
  // Where the user set none of the fork variables, efacoll sets them itself at start.
  if (!plan_fork_safety(true, env).set.empty()) {
    return {"hugepages", Verdict::kOk,
            "FI_EFA_USE_HUGE_PAGE and FI_EFA_FORK_SAFE unset: efacoll sets FI_EFA_FORK_SAFE=1 and "
            "FI_EFA_USE_HUGE_PAGE=0 before libfabric starts, so fork() is safe",
            ""};
  }
  const std::string state = huge.empty() ? "unset (on)" : huge;
  const std::string hint = fork_heavy_hint(env);
  if (!hint.empty()) {
    return {"hugepages", Verdict::kWarn,
            "FI_EFA_USE_HUGE_PAGE " + state + " and " + hint +
                " is set: PyTorch's forked workers can fail with ENOMEM",
            fix};
  }
  return {"hugepages", Verdict::kInfo,
          "FI_EFA_USE_HUGE_PAGE " + state +
              ": a program that forks after EFA starts can fail "
              "with ENOMEM",
          fix};
}

// Copy-on-fork of pinned pages came with kernel 5.13 (rdma-core 35): before it, registered
// memory and fork() need FI_EFA_FORK_SAFE=1; after it, fork protection only costs.
Check fork_check(const EnvMap& env, const std::string& kernel) {
  const bool fork_safe = truthy(env_value(env, "FI_EFA_FORK_SAFE"));
  if (env_has(env, "RDMAV_FORK_SAFE")) {
    return {"fork", Verdict::kWarn,
            "RDMAV_FORK_SAFE is set: rdma-core's fork protection breaks EFA on newer kernels",
            "unset RDMAV_FORK_SAFE (and RDMAV_HUGEPAGES_SAFE)"};
  }
  int major = 0, minor = 0;
  if (std::sscanf(kernel.c_str(), "%d.%d", &major, &minor) != 2) {
    return {"fork", Verdict::kInfo, "kernel version unknown: fork safety not judged", ""};
  }
  const bool old_kernel = major < 5 || (major == 5 && minor < 13);
  if (old_kernel && !fork_safe) {
    return {"fork", Verdict::kWarn,
            "kernel " + kernel + " (< 5.13): fork() after EFA registers memory can corrupt it",
            "FI_EFA_FORK_SAFE=1, or a kernel >= 5.13"};
  }
  if (old_kernel) {
    return {"fork", Verdict::kOk, "FI_EFA_FORK_SAFE=1 on kernel " + kernel + " (< 5.13)", ""};
  }
  if (fork_safe) {
    return {"fork", Verdict::kInfo,
            "FI_EFA_FORK_SAFE=1 is not needed on kernel " + kernel +
                " (>= 5.13) and turns off "
                "huge pages",
            "unset FI_EFA_FORK_SAFE"};
  }
  return {"fork", Verdict::kOk, "kernel " + kernel + " (>= 5.13): fork() after EFA is safe", ""};
}

Check params_check(const EnvMap& env) {
  const Params p = Params::from_env(env);
  if (!p.problems().empty()) {
    return {"params", Verdict::kWarn, join(p.problems()),
            "efacoll_params lists every EFACOLL_* parameter"};
  }
  if (!p.flag(Param::kEnable)) {
    return {"params", Verdict::kInfo, "EFACOLL_ENABLE=0: efacoll passes every call to MPI", ""};
  }
  std::vector<std::string> set;
  for (const auto& kv : env) {
    if (kv.first.rfind("EFACOLL_", 0) == 0) set.push_back(kv.first + "=" + kv.second);
  }
  return {"params", Verdict::kOk, set.empty() ? "EFACOLL_* unset (defaults)" : join(set), ""};
}

}  // namespace

void check_environment(const Observation& obs, Checks* out) {
  iface_checks(obs, out);
  if (!obs.node.efa_devices.empty()) {
    out->push_back(huge_page_check(obs.env));
    out->push_back(fork_check(obs.env, obs.kernel));
  }
  out->push_back(params_check(obs.env));
}

}  // namespace doctor
}  // namespace efacoll

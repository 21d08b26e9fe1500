// efa, libfabric and gpudirect: is EFA there, does the loaded libfabric reach it, and can GPU
// memory go to the NIC directly.
#include <cstdio>

#include "doctor/doctor_checks.h"
#include "policy/gdr_policy.h"
#include "policy/provider_policy.h"

namespace efacoll {
namespace doctor {
namespace {

constexpr char kAwsPrefix[] = "/opt/amazon/efa/";
constexpr char kNoEfaFix[] =
    "run on an EFA-enabled instance type (p4d, p5, ...) with an EFA interface attached at "
    "launch, install AWS's EFA software (efa_installer.sh; libfabric in /opt/amazon/efa), and "
    "let the security group allow all traffic to and from itself";

bool version_below(const std::string& version, int major, int minor) {
  int ma = 0, mi = 0;
  if (std::sscanf(version.c_str(), "%d.%d", &ma, &mi) != 2) return false;
  return ma < major || (ma == major && mi < minor);
}

// The LD_LIBRARY_PATH entry that puts AWS's libfabric first.
std::string aws_library_fix(const FabricFacts& f) {
  if (f.aws_path.empty()) {
    return "install AWS's EFA software (efa_installer.sh), then "
           "LD_LIBRARY_PATH=/opt/amazon/efa/lib:$LD_LIBRARY_PATH (lib64 on Amazon Linux and RHEL)";
  }
  return "LD_LIBRARY_PATH=" + f.aws_path.substr(0, f.aws_path.rfind('/')) + ":$LD_LIBRARY_PATH";
}

std::string efa_device_list(const NodeFacts& node) {
  return std::to_string(node.efa_devices.size()) + " EFA device" +
         (node.efa_devices.size() == 1 ? "" : "s") + " (" + join_brief(node.efa_devices) + ")";
}

// EFACOLL_PROVIDER names another provider: decide_provider's verdict, in its own words.
Check chosen_provider(const Observation& obs, const std::string& requested) {
  const FabricFacts& f = obs.fabric;
  ProviderDecision d =
      decide_provider(requested, f.requested.found, f.offered, env_value(obs.env, "FI_PROVIDER"));
  if (!d.ok) {
    return {"efa", Verdict::kFail, d.error,
            "EFACOLL_PROVIDER=<one of those offered>, or unset it to use EFA"};
  }
  if (obs.node.efa_devices.empty()) {
    return {"efa", Verdict::kWarn, d.warning + "; no EFA device here",
            "none if that is intended; for EFA: " + std::string(kNoEfaFix)};
  }
  return {"efa", Verdict::kWarn, d.warning + "; this host has " + efa_device_list(obs.node),
          "unset EFACOLL_PROVIDER"};
}

Check efa_check(const Observation& obs) {
  const std::string requested = requested_provider(obs.env);
  if (requested != "efa") return chosen_provider(obs, requested);
  const NodeFacts& node = obs.node;
  const FabricFacts& f = obs.fabric;
  const std::string sysfs_ib = node.sysfs_root + "/class/infiniband";
  if (node.efa_devices.empty() && !f.efa.found) {
    return {
        "efa", Verdict::kFail,
        "no EFA device (none in " + sysfs_ib +
            ") and no efa provider in libfabric (it offers: " + join(f.offered) + ")",
        std::string(kNoEfaFix) + "; or choose another provider on purpose: EFACOLL_PROVIDER=tcp"};
  }
  if (f.efa.found && node.efa_devices.empty()) {
    return {"efa", Verdict::kWarn,
            "the efa provider lists " + join_brief(f.efa.domains) + " but " + sysfs_ib +
                " shows no EFA device",
            "run with the host's sysfs (--sysfs ROOT, or mount /sys in the container)"};
  }
  if (!f.efa.found) {
    const std::string fi_provider = env_value(obs.env, "FI_PROVIDER");
    std::string finding =
        efa_device_list(node) + " but the loaded libfabric (" + f.path + ") offers no efa provider";
    if (!provider_list_allows(fi_provider, "efa")) {
      return {"efa", Verdict::kFail, finding + ": FI_PROVIDER=" + fi_provider + " hides it",
              "unset FI_PROVIDER (or add efa to it)"};
    }
    if (node.uverbs == 0) {
      return {
          "efa", Verdict::kFail,
          finding + ": no " + node.dev_root + "/infiniband/uverbs* device to open (see devices)",
          "pass the EFA devices into the container (see devices)"};
    }
    if (f.path.rfind(kAwsPrefix, 0) == 0) {
      return {"efa", Verdict::kFail, finding,
              "FI_LOG_LEVEL=warn fi_info -p efa says why; check the efa kernel module (lsmod | "
              "grep efa) or rerun the EFA installer"};
    }
    return {"efa", Verdict::kFail, finding, aws_library_fix(f)};
  }
  return {"efa", Verdict::kOk,
          efa_device_list(node) + "; efa provider: " + std::to_string(f.efa.domains.size()) +
              " domains (" + join_brief(f.efa.domains) + ")",
          ""};
}

Check libfabric_check(const Observation& obs) {
  const FabricFacts& f = obs.fabric;
  const bool efa_here = !obs.node.efa_devices.empty();
  const std::string line = (f.version.empty() ? "version unknown" : f.version) + ", " +
                           (f.path.empty() ? "path unknown" : f.path) +
                           " - RDM providers: " + join(f.offered);
  if (f.offered.empty()) {
    return {"libfabric", Verdict::kWarn, line,
            "check FI_PROVIDER and FI_PROVIDER_PATH; fi_info -l lists what libfabric finds"};
  }
  if (efa_here && !f.aws_path.empty() && f.path.rfind(kAwsPrefix, 0) != 0) {
    return {"libfabric", Verdict::kWarn, line + "; AWS's libfabric is at " + f.aws_path,
            aws_library_fix(f)};
  }
  if (efa_here && version_below(f.version, 1, 18)) {
    return {"libfabric", Verdict::kWarn,
            line +
                "; before 1.18 EFA RDMA writes are emulated and FI_HMEM needs "
                "FI_EFA_USE_DEVICE_RDMA=1",
            "install a current AWS EFA installer (libfabric >= 1.22, as aws-ofi-nccl requires)"};
  }
  if (efa_here && version_below(f.version, 1, 22)) {
    return {"libfabric", Verdict::kOk, line + "; aws-ofi-nccl (NCCL on EFA) needs >= 1.22", ""};
  }
  return {"libfabric", Verdict::kOk, line, ""};
}

std::string gdr_fix(const Observation& obs) {
  std::string fix =
      "AWS's libfabric built with CUDA (/opt/amazon/efa) and the NVIDIA peer-memory kernel "
      "support (nvidia-peermem, or the EFA driver's GPUDirect support)";
  if (version_below(obs.fabric.version, 1, 18) &&
      !truthy(env_value(obs.env, "FI_EFA_USE_DEVICE_RDMA"))) {
    fix += "; with libfabric " + obs.fabric.version + ": FI_EFA_USE_DEVICE_RDMA=1";
  }
  return fix;
}

// What the trial registration found, as a clause.
std::string trial_clause(const GpuTrialFact& t) {
  if (t.ok) return "a GPU buffer registered through it (by " + t.detail + ")";
  if (t.tried) return "registering a GPU buffer through it failed (" + t.detail + ")";
  return "no GPU buffer could be registered to confirm it (" + t.detail + ")";
}

Check gpudirect_check(const Observation& obs) {
  const Topology& topo = obs.node.topo;
  const ProviderProbe& efa = obs.fabric.efa;
  const std::string requested = requested_provider(obs.env);
  if (topo.gpus.empty()) return {"gpudirect", Verdict::kInfo, "no GPU: not applicable", ""};
  if (requested != "efa") {
    const ProviderProbe& other = obs.fabric.requested;
    if (other.hmem && other.gpu_trial.ok) {
      return {"gpudirect", Verdict::kInfo,
              "provider " + requested + " offers FI_HMEM and " + trial_clause(other.gpu_trial) +
                  ": device pointers go to it (EFACOLL_HMEM); not EFA, so no GPUDirect RDMA",
              ""};
    }
    const std::string trial =
        other.hmem ? " (it offers FI_HMEM, but " + trial_clause(other.gpu_trial) + ")" : "";
    return {"gpudirect", Verdict::kInfo,
            "provider " + requested +
                ": GPU data is staged through host memory unless it has FI_HMEM and a trial "
                "registration at MPI_Init succeeds (EFACOLL_HMEM)" +
                trial + "; not EFA, so no GPUDirect RDMA",
            ""};
  }
  if (!efa.found) {
    return {"gpudirect", Verdict::kInfo, "no efa provider: GPUDirect RDMA impossible (see efa)",
            ""};
  }
  const std::string rma = efa.rma ? "FI_RMA" : "no FI_RMA (one-sided protocol off)";
  if (efa.hmem && efa.gpu_trial.ok) {
    return {"gpudirect", Verdict::kOk,
            "efa has FI_HMEM (GPUDirect RDMA): " + trial_clause(efa.gpu_trial) + "; and " + rma,
            ""};
  }
  const bool require = Params::from_env(obs.env).flag(Param::kRequireGdr);
  if (efa.hmem && !efa.gpu_trial.tried) {
    // Nothing proven either way (no GPU runtime in this process): MPI_Init will try.
    return {"gpudirect", require ? Verdict::kFail : Verdict::kWarn,
            "efa offers FI_HMEM, but " + trial_clause(efa.gpu_trial) +
                "; MPI_Init tries again and stages GPU data if it fails" +
                (require ? " (an error under EFACOLL_REQUIRE_GDR=1)" : ""),
            "run efacoll-doctor where the application's CUDA driver is loadable"};
  }
  // FI_HMEM absent, or offered and refused: to efacoll both mean GPU data staged.
  const std::string why = efa.hmem ? "efa offers FI_HMEM, but " + trial_clause(efa.gpu_trial)
                                   : "efa has no FI_HMEM";
  GdrDecision d = decide_gdr("efa", false, true, topo.product, require);
  if (!d.ok) return {"gpudirect", Verdict::kFail, why + ": " + d.error, gdr_fix(obs)};
  if (!d.warning.empty()) return {"gpudirect", Verdict::kWarn, why + ": " + d.warning, gdr_fix(obs)};
  const std::string product = topo.product.empty() ? "this instance type (unknown)" : topo.product;
  return {"gpudirect", Verdict::kInfo,
          why + " and " + rma + ": GPU data is staged through host memory; " + product +
              " is not one that has GPUDirect RDMA",
          ""};
}

}  // namespace

void check_fabric(const Observation& obs, Checks* out) {
  out->push_back(efa_check(obs));
  out->push_back(libfabric_check(obs));
  out->push_back(gpudirect_check(obs));
}

}  // namespace doctor
}  // namespace efacoll

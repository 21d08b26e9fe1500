// mpi and mpi-net: which MPI this is, and whether its own traffic (everything efacoll does not
// run) crosses the fabric on EFA or on TCP, judged from its settings after efacoll's steering.
#include "doctor/doctor_checks.h"
#include "policy/host_mpi_steering.h"

namespace efacoll {
namespace doctor {
namespace {

constexpr char kOmpiFix[] =
    "OMPI_MCA_pml=cm OMPI_MCA_mtl=ofi (mpirun --mca pml cm --mca mtl ofi), with an Open MPI "
    "built on AWS's libfabric (/opt/amazon/openmpi)";
constexpr char kMpichFix[] = "an MPICH built with --with-device=ch4:ofi on AWS's libfabric";
constexpr char kTcpTail[] = ": its own traffic goes over TCP (efacoll's collectives still use EFA)";

// Whether a comma list (Open MPI component selection; "^a,b" excludes) selects `item`.
bool selects(const std::string& list, const std::string& item) {
  if (list.empty() || list[0] == '^') return false;
  for (const std::string& i : split_list(list)) {
    if (i == item) return true;
  }
  return false;
}

Check verdict(Verdict v, const std::string& finding, const std::string& fix = "") {
  return {"mpi-net", v, finding, fix};
}

Check open_mpi(const EnvMap& env) {
  const std::string pml = env_value(env, "OMPI_MCA_pml");
  const std::string mtl = env_value(env, "OMPI_MCA_mtl");
  const std::string btl = env_value(env, "OMPI_MCA_btl");
  const std::string include = env_value(env, "OMPI_MCA_mtl_ofi_provider_include");
  if (selects(pml, "ucx")) {
    return verdict(Verdict::kWarn, "OMPI_MCA_pml=" + pml + ": UCX has no EFA transport" + kTcpTail,
                   kOmpiFix);
  }
  if (selects(pml, "ob1")) {
    if (selects(btl, "ofi")) return verdict(Verdict::kOk, "pml ob1 with btl ofi: EFA");
    return verdict(
        Verdict::kWarn,
        "OMPI_MCA_pml=ob1 with " + (btl.empty() ? "the default BTLs" : "btl " + btl) + kTcpTail,
        kOmpiFix);
  }
  if (!mtl.empty() && !selects(mtl, "ofi")) {
    return verdict(Verdict::kWarn, "OMPI_MCA_mtl=" + mtl + " is not the OFI MTL" + kTcpTail,
                   kOmpiFix);
  }
  if (!provider_list_allows(include, "efa")) {
    return verdict(Verdict::kWarn,
                   "OMPI_MCA_mtl_ofi_provider_include=" + include + ": the OFI MTL skips efa",
                   "OMPI_MCA_mtl_ofi_provider_include=efa");
  }
  if (selects(pml, "cm")) return verdict(Verdict::kOk, "pml cm, mtl ofi, provider efa: EFA");
  return verdict(Verdict::kInfo,
                 "OMPI_MCA_pml unset: Open MPI chooses (cm + mtl ofi on EFA where built on "
                 "libfabric, as AWS's is; ucx, over TCP, where built with UCX)",
                 "to be sure: " + std::string(kOmpiFix));
}

Check intel_mpi(const EnvMap& env) {
  const std::string internal = env_value(env, "I_MPI_OFI_LIBRARY_INTERNAL");
  const std::string provider = env_value(env, "I_MPI_OFI_PROVIDER");
  const std::string fi_provider = env_value(env, "FI_PROVIDER");
  const std::string fix =
      "I_MPI_OFI_LIBRARY_INTERNAL=0 I_MPI_OFI_PROVIDER=efa, AWS's libfabric on LD_LIBRARY_PATH";
  if (internal.empty() || truthy(internal)) {
    return verdict(Verdict::kWarn,
                   "I_MPI_OFI_LIBRARY_INTERNAL=" + (internal.empty() ? "unset (1)" : internal) +
                       ": Intel MPI's bundled libfabric has no EFA provider" + kTcpTail,
                   fix);
  }
  if (!provider.empty() && provider != "efa") {
    return verdict(Verdict::kWarn, "I_MPI_OFI_PROVIDER=" + provider + kTcpTail, fix);
  }
  if (!provider_list_allows(fi_provider, "efa")) {
    return verdict(Verdict::kWarn, "FI_PROVIDER=" + fi_provider + kTcpTail, fix);
  }
  return verdict(Verdict::kOk, "system libfabric, provider " +
                                   (provider.empty() ? "libfabric's first (efa)" : provider) +
                                   ": EFA");
}

Check libfabric_mpi(const std::string& version, const EnvMap& env) {
  const std::string fi_provider = env_value(env, "FI_PROVIDER");
  if (version.find("ch4:ucx") != std::string::npos) {
    return verdict(Verdict::kWarn,
                   "built with ch4:ucx: UCX has no EFA transport" + std::string(kTcpTail),
                   kMpichFix);
  }
  if (version.find("ch3") != std::string::npos && version.find("ofi") == std::string::npos) {
    return verdict(Verdict::kWarn, "built with a ch3 device" + std::string(kTcpTail), kMpichFix);
  }
  if (!provider_list_allows(fi_provider, "efa")) {
    return verdict(Verdict::kWarn, "FI_PROVIDER=" + fi_provider + kTcpTail,
                   "FI_PROVIDER=efa, or unset it");
  }
  if (!fi_provider.empty()) return verdict(Verdict::kOk, "FI_PROVIDER=" + fi_provider + ": EFA");
  return verdict(Verdict::kInfo, "FI_PROVIDER unset: libfabric picks its first provider (efa)");
}

Check mpi_net_check(const Observation& obs) {
  const MpiFlavor flavor = detect_mpi_flavor(obs.mpi_version);
  const std::string name = mpi_flavor_name(flavor);
  if (obs.node.efa_devices.empty()) {
    return verdict(Verdict::kInfo,
                   "no EFA device: " + name + " uses its own transports (TCP, shared memory)");
  }
  // What the job will see: efacoll's steering, applied at MPI_Init, never over the user's own.
  const Params params = Params::from_env(obs.env);
  const bool steer = params.flag(Param::kEnable) && params.flag(Param::kSteerMpi);
  const SteeringPlan plan = plan_host_mpi_steering(flavor, true, obs.env);
  EnvMap env = obs.env;
  std::vector<std::string> set;
  if (steer) {
    for (const auto& kv : plan.set) {
      env[kv.first] = kv.second;
      set.push_back(kv.first + "=" + kv.second);
    }
  }
  Check c = flavor == MpiFlavor::kOpenMpi    ? open_mpi(env)
            : flavor == MpiFlavor::kIntelMpi ? intel_mpi(env)
                                             : libfabric_mpi(obs.mpi_version, env);
  c.finding = name + ": " + c.finding;
  if (!set.empty()) c.finding += " (preloaded, efacoll sets " + join(set) + " at MPI_Init)";
  if (!steer) c.finding += " (EFACOLL_STEER_MPI=0 or EFACOLL_ENABLE=0: efacoll sets nothing)";
  return c;
}

}  // namespace

void check_mpi(const Observation& obs, Checks* out) {
  const std::string& v = obs.mpi_version;
  if (v.empty()) {
    out->push_back({"mpi", Verdict::kInfo, "MPI library unknown", ""});
  } else {
    std::string first = v.substr(0, v.find('\n'));
    while (!first.empty() && (first.back() == ' ' || first.back() == ',')) first.pop_back();
    out->push_back(
        {"mpi", Verdict::kInfo, first + " (" + mpi_flavor_name(detect_mpi_flavor(v)) + ")", ""});
  }
  out->push_back(mpi_net_check(obs));
}

}  // namespace doctor
}  // namespace efacoll

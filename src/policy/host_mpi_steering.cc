#include "policy/host_mpi_steering.h"

namespace efacoll {

MpiFlavor detect_mpi_flavor(const std::string& v) {
  if (v.find("Open MPI") != std::string::npos) return MpiFlavor::kOpenMpi;
  if (v.find("Intel(R) MPI") != std::string::npos || v.find("Intel MPI") != std::string::npos)
    return MpiFlavor::kIntelMpi;
  if (v.find("MVAPICH") != std::string::npos) return MpiFlavor::kMvapich;
  if (v.find("MPICH") != std::string::npos) return MpiFlavor::kMpich;
  return MpiFlavor::kUnknown;
}

const char* mpi_flavor_name(MpiFlavor flavor) {
  switch (flavor) {
    case MpiFlavor::kOpenMpi:
      return "Open MPI";
    case MpiFlavor::kIntelMpi:
      return "Intel MPI";
    case MpiFlavor::kMpich:
      return "MPICH";
    case MpiFlavor::kMvapich:
      return "MVAPICH";
    case MpiFlavor::kUnknown:
      break;
  }
  return "unknown MPI";
}

SteeringPlan plan_host_mpi_steering(MpiFlavor flavor, bool efa_present, const EnvMap& env) {
  SteeringPlan plan;
  if (!efa_present) {
    plan.messages.push_back(std::string("no EFA device: the host MPI (") + mpi_flavor_name(flavor) +
                            ") keeps its own transport choice");
    return plan;
  }
  auto want = [&](const char* name, const char* value, const char* why) {
    auto it = env.find(name);
    if (it != env.end()) {
      plan.messages.push_back(std::string(name) + "=" + it->second +
                              " set by the user; left as is");
      return;
    }
    plan.set.emplace_back(name, value);
    plan.messages.push_back(std::string("set ") + name + "=" + value + " (" + why + ")");
  };
  switch (flavor) {
    case MpiFlavor::kOpenMpi:
      want("OMPI_MCA_mtl_ofi_provider_include", "efa", "Open MPI's OFI MTL on EFA");
      break;
    case MpiFlavor::kIntelMpi:
      // Intel MPI's bundled libfabric has no EFA provider: use the system (AWS) one.
      want("I_MPI_OFI_LIBRARY_INTERNAL", "0", "Intel MPI uses the system libfabric, which has EFA");
      want("I_MPI_OFI_PROVIDER", "efa", "Intel MPI on EFA");
      break;
    case MpiFlavor::kMpich:
    case MpiFlavor::kMvapich:
    case MpiFlavor::kUnknown:
      want("FI_PROVIDER", "efa", "the MPI's libfabric on EFA");
      break;
  }
  return plan;
}

}  // namespace efacoll

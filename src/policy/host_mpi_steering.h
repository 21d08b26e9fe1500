// Steering the host MPI's own traffic onto EFA: which variables to set before PMPI_Init.
// A pure function of (MPI flavour, whether EFA is present, the environment); never overrides
// a variable the user set.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "common/params.h"

namespace efacoll {

enum class MpiFlavor { kOpenMpi, kIntelMpi, kMpich, kMvapich, kUnknown };

// From MPI_Get_library_version's text.
MpiFlavor detect_mpi_flavor(const std::string& library_version);
const char* mpi_flavor_name(MpiFlavor flavor);

struct SteeringPlan {
  std::vector<std::pair<std::string, std::string>> set;  // variables to set
  std::vector<std::string> messages;                     // one INFO line each
};

SteeringPlan plan_host_mpi_steering(MpiFlavor flavor, bool efa_present, const EnvMap& env);

}  // namespace efacoll

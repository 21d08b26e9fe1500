// efacoll-doctor's rules: "will this job use EFA and GPUDirect, and if not, why?" Each family
// appends its checks; all are pure functions of the observation.
#pragma once
#include "doctor/doctor_check.h"
#include "doctor/doctor_observation.h"

namespace efacoll {
namespace doctor {

// Every family below, in the order the report prints them.
Checks run_checks(const Observation& obs);

// efa (devices and provider), libfabric (library, version, providers), gpudirect.
void check_fabric(const Observation& obs, Checks* out);
// instance, gpus, one gpuN per GPU (NUMA, nearest NICs, NVLink), devices (containers), memlock.
void check_node(const Observation& obs, Checks* out);
// mpi (library and flavour), mpi-net (EFA or TCP for the MPI's own traffic).
void check_mpi(const Observation& obs, Checks* out);
// Interface variables naming absent interfaces, huge pages and fork, efacoll's parameters.
void check_environment(const Observation& obs, Checks* out);

// EFACOLL_PROVIDER as the library reads it (default efa).
std::string requested_provider(const EnvMap& env);

}  // namespace doctor
}  // namespace efacoll

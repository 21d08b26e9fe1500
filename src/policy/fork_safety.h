// fork() after MPI_Init (PyTorch DataLoader workers, subprocess): what to set for libfabric's
// efa provider before it initialises (PMPI_Init, or our first fi_getinfo). A pure function of
// (EFA present, the environment); never overrides a variable the user set.
#pragma once
#include "common/params.h"
#include "policy/host_mpi_steering.h"

namespace efacoll {

SteeringPlan plan_fork_safety(bool efa_present, const EnvMap& env);

}  // namespace efacoll

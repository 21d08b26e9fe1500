// fork() after MPI_Init (PyTorch DataLoader workers, subprocess): what to set for libfabric's
// efa provider before it initialises (PMPI_Init, or our first fi_getinfo). Never overrides a
// variable the user set.
#pragma once
#include <string>

#include "common/params.h"
#include "policy/host_mpi_steering.h"

namespace efacoll {

// Whether a Linux release string ("6.1.0-18-cloud-amd64") is 5.13 or later: such kernels copy
// pinned (registered) pages for the child at fork(), and rdma-core 35 on reports fork support
// as unneeded there. false for a string that is not a release.
bool kernel_copies_pinned_pages_on_fork(const std::string& kernel_release);

// A pure function of (EFA present, the kernel release as uname -r gives it, the environment).
// An unreadable release is planned for as a recent kernel.
SteeringPlan plan_fork_safety(bool efa_present, const std::string& kernel_release,
                              const EnvMap& env);

// The same for the running kernel (uname).
SteeringPlan plan_fork_safety(bool efa_present, const EnvMap& env);

}  // namespace efacoll

// Fills efacoll-doctor's observation from the real machine: sysfs and /dev (or trees shaped like
// them), libfabric as loaded, resource limits. The MPI library's version is the tool's to add:
// nothing below tools/ and mpi_shim/ includes mpi.h.
#pragma once
#include <string>

#include "doctor/doctor_observation.h"

namespace efacoll {
namespace doctor {

// Files only: fixture trees in tests, a container's view with --sysfs / --dev.
NodeFacts observe_node(const std::string& sysfs_root, const std::string& dev_root);
// fi_getinfo, fi_version, dladdr: efa always, and `requested` when it is not efa, each asked for
// FI_HMEM; where a provider offers it, a GPU buffer is registered through it as MPI_Init would
// on local rank `local_rank` (-1: none known, as 0).
FabricFacts observe_fabric(const std::string& requested, int local_rank);
// All of the above, with host name, kernel release and RLIMIT_MEMLOCK.
Observation observe(const std::string& sysfs_root, const std::string& dev_root, const EnvMap& env);

// This process's rank on its node under a launcher (mpirun, mpiexec.hydra, srun), or -1 outside
// one. Where a launcher gives only the job-wide PMI_RANK, that is returned.
int launcher_local_rank(const EnvMap& env);

}  // namespace doctor
}  // namespace efacoll

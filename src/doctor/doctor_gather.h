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
// fi_getinfo, fi_version, dladdr: efa always (with FI_HMEM), and `requested` when it is not efa.
FabricFacts observe_fabric(const std::string& requested);
// All of the above, with host name, kernel release and RLIMIT_MEMLOCK.
Observation observe(const std::string& sysfs_root, const std::string& dev_root, const EnvMap& env);

// This process's rank on its node under a launcher (mpirun, mpiexec.hydra, srun), or -1 outside
// one. Where a launcher gives only the job-wide PMI_RANK, that is returned.
int launcher_local_rank(const EnvMap& env);

}  // namespace doctor
}  // namespace efacoll

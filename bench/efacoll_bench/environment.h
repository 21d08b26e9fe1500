// What efacoll-bench asks of the machine and the host MPI, for its setup and its header.
#ifndef EFACOLL_BENCH_ENVIRONMENT_H
#define EFACOLL_BENCH_ENVIRONMENT_H

#include <string>
#include <vector>

namespace efacoll_bench {

// The node-local rank the launcher gives, readable before MPI_Init; 0 when it gives none.
int launcher_local_rank();

std::string host_mpi_version();  // MPI_Get_library_version's first line
std::string date_now();

// Whether the host MPI says it takes CUDA buffers (Open MPI's MPIX_Query_cuda_support).
bool host_mpi_takes_gpu_buffers();

int ranks_on_this_node();

// The lowest rank where `failed` is true, or -1 if none: that rank explains. Collective.
int first_failing_rank(bool failed);

// Every rank's `line`, on rank 0 (empty elsewhere). Collective.
std::vector<std::string> gather_lines(const std::string& line);

}  // namespace efacoll_bench

#endif

#include "environment.h"

#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI's extensions: MPIX_Query_cuda_support
#endif

#include <cstdlib>
#include <cstring>
#include <ctime>

namespace efacoll_bench {

int launcher_local_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    if (const char* v = std::getenv(var)) return std::atoi(v);
  }
  return 0;
}

std::string host_mpi_version() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int length = 0;
  PMPI_Get_library_version(version, &length);
  std::string text(version, std::strcspn(version, "\n"));
  while (!text.empty() && (text.back() == ',' || text.back() == ' ')) text.pop_back();
  return text;
}

std::string date_now() {
  char text[64];
  const time_t now = std::time(nullptr);
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S %Z", std::localtime(&now));
  return text;
}

bool host_mpi_takes_gpu_buffers() {
#if defined(MPIX_CUDA_AWARE_SUPPORT)
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

int ranks_on_this_node() {
  MPI_Comm node;
  int size = 1;
  if (PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) !=
      MPI_SUCCESS)
    return size;
  PMPI_Comm_size(node, &size);
  PMPI_Comm_free(&node);
  return size;
}

int first_failing_rank(bool failed) {
  int rank = 0, nranks = 1, first = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &nranks);
  int mine = failed ? rank : nranks;
  PMPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return first < nranks ? first : -1;
}

std::vector<std::string> gather_lines(const std::string& line) {
  constexpr int kWidth = 200;
  int rank = 0, nranks = 1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &nranks);
  char mine[kWidth] = "";
  std::strncpy(mine, line.c_str(), kWidth - 1);
  std::vector<char> all(rank == 0 ? static_cast<size_t>(kWidth) * nranks : 1);
  PMPI_Gather(mine, kWidth, MPI_CHAR, all.data(), kWidth, MPI_CHAR, 0, MPI_COMM_WORLD);
  std::vector<std::string> lines;
  if (rank == 0) {
    for (int r = 0; r < nranks; ++r) lines.emplace_back(&all[static_cast<size_t>(kWidth) * r]);
  }
  return lines;
}

}  // namespace efacoll_bench

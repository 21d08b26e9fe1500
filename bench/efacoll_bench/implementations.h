// The three implementations of one call: efacoll (MPI_*, which LD_PRELOAD sends to efacoll), the
// host MPI (PMPI_*; through pinned host memory when it cannot take GPU buffers) and NCCL.
#ifndef EFACOLL_BENCH_IMPLEMENTATIONS_H
#define EFACOLL_BENCH_IMPLEMENTATIONS_H

#include <cstddef>
#include <string>

#include "buffers.h"
#include "check_pattern.h"
#include "nccl_loader.h"
#include "options.h"

namespace efacoll_bench {

enum class Impl { kEfacoll, kHostMpi, kNccl };

struct CallSetup {
  Options options;
  int rank = 0, nranks = 1;
  Buffers* buffers = nullptr;
  // The host MPI cannot take GPU buffers: its calls copy through pinned host memory, timed.
  bool host_mpi_staged = false;
  NcclLibrary* nccl = nullptr;  // where there is an NCCL column
  void* nccl_stream = nullptr;
};

// One blocking call: the result is in place when it returns (NCCL's stream is synchronised).
// A failure ends the job (MPI_Abort) with a message.
void run_call(const CallSetup& s, Impl impl, size_t count);

// One call on fresh inputs and a poisoned result, checked against the pattern: the wrong elements
// summed over ranks (each rank with wrong ones says where the first is, on stderr).
long long checked_call(const CallSetup& s, const CheckPattern& pattern, Impl impl, size_t count);

// Prints "efacoll-bench: rank R: WHAT failed: DETAIL" and aborts the job.
[[noreturn]] void fail(const char* what, const std::string& detail);

}  // namespace efacoll_bench

#endif

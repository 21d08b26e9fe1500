// -c: one call per size and implementation on fresh inputs, before the timed ones (which then
// run on whatever the check left, as nccl-tests' do).
#include <mpi.h>

#include <cstdio>

#include "device.h"
#include "implementations.h"

namespace efacoll_bench {

long long checked_call(const CallSetup& s, const CheckPattern& pattern, Impl impl, size_t count) {
  Buffers& buffers = *s.buffers;
  const CallLayout l =
      buffers.layout(count, impl == Impl::kNccl ? InPlaceStyle::kNccl : InPlaceStyle::kMpi);
  if (!buffers.write_inputs(l, pattern) || !buffers.poison_result(l))
    fail("preparing a checked call", gpu_last_error());
  run_call(s, impl, count);
  const void* result = buffers.result_on_host(l);
  if (result == nullptr) fail("reading a result", gpu_last_error());
  CheckResult r;
  switch (s.options.collective) {
    case Collective::kAllgather:
      r = pattern.check_gathered(result, count);
      break;
    case Collective::kAllreduce:
      r = pattern.check_reduced(result, 0, count);
      break;
    default:  // this rank's block of the reduction
      r = pattern.check_reduced(result, static_cast<size_t>(s.rank) * count, count);
      break;
  }
  if (r.wrong > 0) {
    // Where it goes wrong tells a misplaced block from a missed one.
    static const char* const kNames[] = {"efacoll", "host MPI", "NCCL"};
    std::fprintf(stderr,
                 "efacoll-bench: rank %d, %s, count %zu: %zu wrong, first [%zu] = %g, want %g\n",
                 s.rank, kNames[static_cast<int>(impl)], count, r.wrong, r.first, r.got, r.want);
  }
  long long mine = static_cast<long long>(r.wrong), total = 0;
  PMPI_Allreduce(&mine, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

}  // namespace efacoll_bench

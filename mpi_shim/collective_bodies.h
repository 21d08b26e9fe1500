// The four collectives' bodies (shim_collectives.cc), shared by the blocking, large-count and
// nonblocking entry points: arguments checked, the ranks' agreed route, the engine's arguments;
// then `run` takes the call to the engine (blocking: run_engine; nonblocking: queued on the
// communicator's worker) and `call` is the same call through PMPI where MPI takes it.
#pragma once
#include <mpi.h>

#include <functional>

#include "efacoll/engine.h"
#include "mpi_shim/call_queue.h"
#include "mpi_shim/shim.h"

namespace efacoll {
namespace shim {

// The call through PMPI on (send, recv): the user's buffers, or host copies of GPU ones.
using Call = std::function<int(const void*, void*)>;
// How the call runs on the engine.
struct Run {
  // A blocking call, where the ranks may agree on the route (shim_routing.cc); a nonblocking
  // one must not wait for the others, so it takes the last agreement.
  bool blocking = true;
  // `bytes` for the statistics; b, spans and call for a fallback to MPI.
  std::function<int(MPI_Comm comm, const CollArgs& args, size_t bytes, const CallBuffers& b,
                    const StagedSpans& spans, const Call& call)>
      start;
};

// An entry point's body: no exception crosses the C boundary (raised through the communicator's
// handler instead, raise_exception).
template <typename Body>
int guarded(MPI_Comm comm, const char* name, Body body) noexcept {
  try {
    return body();
  } catch (...) {
    return raise_exception(comm, name);
  }
}

// Whether `call` was given host copies of the caller's GPU buffers (staged_pmpi) rather than the
// caller's own (sendbuf, recvbuf): they go when the call returns.
inline bool given_staged_copies(const void* sendbuf, const void* recvbuf, const void* s,
                                const void* r) {
  return r != recvbuf || (sendbuf != MPI_IN_PLACE && s != sendbuf);
}

// Passes the call to MPI (GPU data staged unless MPI is CUDA-aware), `reason` counted.
int pass(CollKind kind, const char* reason, MPI_Comm comm, const CallBuffers& b,
         const StagedSpans& spans, const Call& call);

// The engine's communicator and call queue for a call queued on it, set up in the caller's
// thread. false where it cannot: MPI took the call (the engine declined it) or the error was
// raised; `rc` then holds the call's return code.
bool queued_engine(MPI_Comm comm, const char* name, const CollArgs& args, const CallBuffers& b,
                   const StagedSpans& spans, const Call& call, Comm** ec, CallQueue** queue,
                   int* rc);
// The engine's call as a queued call's work (call_queue.h): a copy of `args` and of its receive
// counts (`comm`'s size of them), counted in the statistics when it ends.
std::function<Status()> engine_work(Comm* ec, MPI_Comm comm, const CollArgs& args, size_t bytes);

int allreduce(const char* name, const void* sendbuf, void* recvbuf, MPI_Count count,
              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, const Call& call, const Run& run);
int allgather(const char* name, const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
              void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
              const Call& call, const Run& run);
// MPI_Reduce_scatter (recvcounts), or MPI_Reduce_scatter_block (`blocked`: `block` items for
// every rank). Count: int or MPI_Count.
template <typename Count>
int reduce_scatter(const char* name, bool blocked, const void* sendbuf, void* recvbuf,
                   const Count* recvcounts, MPI_Count block, MPI_Datatype datatype, MPI_Op op,
                   MPI_Comm comm, const Call& call, const Run& run);

}  // namespace shim
}  // namespace efacoll

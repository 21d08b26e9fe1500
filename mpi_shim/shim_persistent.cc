// Persistent collectives: MPI-4's MPI_Allreduce_init, MPI_Allgather_init,
// MPI_Reduce_scatter_init and MPI_Reduce_scatter_block_init where the MPI defines them (MPICH 4),
// and Open MPI 4.1's MPIX_*_init (its pcollreq extension). The checks and the route are made once,
// at init, as for a nonblocking call (no agreement: init must not wait for the other ranks); the
// engine's communicator and queue are set up then, and each MPI_Start queues the same call
// (shim_requests.cc). Calls MPI takes go to its own persistent form; GPU data MPI would need
// staged at every start is refused (MPI_ERR_OTHER, said plainly).
#include <mpi.h>
#if defined(OPEN_MPI)
#include <mpi-ext.h>
#endif

#include <memory>

#include "mpi_shim/call_queue.h"
#include "mpi_shim/collective_bodies.h"
#include "mpi_shim/shim.h"

#if MPI_VERSION >= 4 || defined(OMPI_HAVE_MPI_EXT_PCOLLREQ)

namespace efacoll {
namespace shim {
namespace {

Run persistent(const char* name, MPI_Request* request) {
  Run run;
  run.blocking = false;
  run.start = [=](MPI_Comm comm, const CollArgs& args, size_t bytes, const CallBuffers& b,
                  const StagedSpans& spans, const Call& call) -> int {
    Comm* ec = nullptr;
    CallQueue* queue = nullptr;
    int rc = MPI_SUCCESS;
    if (!queued_engine(comm, name, args, b, spans, call, &ec, &queue, &rc)) return rc;
    std::function<Status()> work = engine_work(ec, comm, args, bytes);
    return start_persistent(
        comm, name,
        [queue, work]() {
          auto pending = std::make_shared<PendingCall>();
          pending->work = work;
          queue->submit(pending);
          return pending;
        },
        request);
  };
  return run;
}

// MPI's own persistent init, where its buffers are the caller's; GPU data staged for MPI cannot
// be kept staged across starts.
template <typename Init>
Call through_mpi(const void* sendbuf, void* recvbuf, MPI_Comm comm, const char* name, Init init) {
  return [=](const void* s, void* r) -> int {
    if (!given_staged_copies(sendbuf, recvbuf, s, r)) return init(s, r);
    return raise_error(
        comm, Status(Code::kUnsupported,
                     std::string(name) + ": GPU buffers that MPI would need staged at every start "
                                         "(an MPI that is not CUDA-aware, and the ranks' route is "
                                         "MPI's): not supported"));
  };
}

}  // namespace
}  // namespace shim
}  // namespace efacoll

using namespace efacoll;
using namespace efacoll::shim;

// One set of entry points per spelling: MPI-4's names, and Open MPI's MPIX_ extension.
#define EFACOLL_PERSISTENT_ENTRIES(PREFIX, PMPI_PREFIX)                                            \
  EFACOLL_EXPORT int PREFIX##Allreduce_init(const void* sendbuf, void* recvbuf, int count,         \
                                            MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,       \
                                            MPI_Info info, MPI_Request* request) {                 \
    const char* name = #PREFIX "Allreduce_init";                                                   \
    return guarded(comm, name, [&] {                                                               \
      return allreduce(name, sendbuf, recvbuf, count, datatype, op, comm,                          \
                       through_mpi(sendbuf, recvbuf, comm, name,                                   \
                                   [=](const void* s, void* r) {                                   \
                                     return PMPI_PREFIX##Allreduce_init(s, r, count, datatype, op, \
                                                                        comm, info, request);      \
                                   }),                                                             \
                       persistent(name, request));                                                 \
    });                                                                                            \
  }                                                                                                \
  EFACOLL_EXPORT int PREFIX##Allgather_init(                                                       \
      const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,     \
      MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request* request) {                 \
    const char* name = #PREFIX "Allgather_init";                                                   \
    return guarded(comm, name, [&] {                                                               \
      return allgather(name, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,     \
                       through_mpi(sendbuf, recvbuf, comm, name,                                   \
                                   [=](const void* s, void* r) {                                   \
                                     return PMPI_PREFIX##Allgather_init(s, sendcount, sendtype, r, \
                                                                        recvcount, recvtype, comm, \
                                                                        info, request);            \
                                   }),                                                             \
                       persistent(name, request));                                                 \
    });                                                                                            \
  }                                                                                                \
  EFACOLL_EXPORT int PREFIX##Reduce_scatter_init(                                                  \
      const void* sendbuf, void* recvbuf, const int recvcounts[], MPI_Datatype datatype,           \
      MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request* request) {                             \
    const char* name = #PREFIX "Reduce_scatter_init";                                              \
    return guarded(comm, name, [&] {                                                               \
      return reduce_scatter(name, false, sendbuf, recvbuf, recvcounts, 0, datatype, op, comm,      \
                            through_mpi(sendbuf, recvbuf, comm, name,                              \
                                        [=](const void* s, void* r) {                              \
                                          return PMPI_PREFIX##Reduce_scatter_init(                 \
                                              s, r, recvcounts, datatype, op, comm, info,          \
                                              request);                                            \
                                        }),                                                        \
                            persistent(name, request));                                            \
    });                                                                                            \
  }                                                                                                \
  EFACOLL_EXPORT int PREFIX##Reduce_scatter_block_init(                                            \
      const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,         \
      MPI_Comm comm, MPI_Info info, MPI_Request* request) {                                        \
    const char* name = #PREFIX "Reduce_scatter_block_init";                                        \
    return guarded(comm, name, [&] {                                                               \
      return reduce_scatter<int>(                                                                  \
          name, true, sendbuf, recvbuf, nullptr, recvcount, datatype, op, comm,                    \
          through_mpi(sendbuf, recvbuf, comm, name,                                                \
                      [=](const void* s, void* r) {                                                \
                        return PMPI_PREFIX##Reduce_scatter_block_init(s, r, recvcount, datatype,   \
                                                                      op, comm, info, request);    \
                      }),                                                                          \
          persistent(name, request));                                                              \
    });                                                                                            \
  }

#if MPI_VERSION >= 4
EFACOLL_PERSISTENT_ENTRIES(MPI_, PMPI_)
#endif
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ)
EFACOLL_PERSISTENT_ENTRIES(MPIX_, PMPIX_)
#endif

#endif  // MPI_VERSION >= 4 || OMPI_HAVE_MPI_EXT_PCOLLREQ

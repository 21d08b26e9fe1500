// MPI_Iallreduce, MPI_Iallgather, MPI_Ireduce_scatter and MPI_Ireduce_scatter_block: the
// blocking calls' checks and routing (collective_bodies.h), then the engine's call queued on the
// communicator's worker (call_queue.h) behind a generalized request (shim_requests.cc). The
// worker runs it whether or not the caller enters MPI: GPU and fabric paths alike progress while
// the caller computes. Calls MPI takes go to its own nonblocking forms; GPU data that MPI would
// get staged (an MPI that is not CUDA-aware) is staged and reduced at once, the request returned
// complete.
#include <chrono>
#include <memory>
#include <vector>

#include "mpi_shim/call_queue.h"
#include "mpi_shim/collective_bodies.h"
#include "mpi_shim/shim.h"

namespace efacoll {
namespace shim {
namespace {

// The engine's call on the communicator's worker; the request completes when it ends.
int start_engine(MPI_Comm comm, const char* name, const CollArgs& args, size_t bytes,
                 const CallBuffers& b, const StagedSpans& spans, const Call& call,
                 MPI_Request* request) {
  Comm* ec = nullptr;
  CallQueue* queue = nullptr;
  int rc = MPI_SUCCESS;
  if (!queued_engine(comm, name, args, b, spans, call, &ec, &queue, &rc)) return rc;
  auto pending = std::make_shared<PendingCall>();
  pending->work = engine_work(ec, comm, args, bytes);
  queue->submit(pending);
  return start_request(comm, name, std::move(pending), request);
}

// `call` through MPI's nonblocking form, or staged and blocking where its buffers are host
// copies of GPU data (they go when the call returns): then a request already complete.
template <typename Nonblocking, typename Blocking>
Call through_mpi(const void* sendbuf, void* recvbuf, MPI_Comm comm, const char* name,
                 MPI_Request* request, Nonblocking nonblocking, Blocking blocking) {
  return [=](const void* s, void* r) -> int {
    if (!given_staged_copies(sendbuf, recvbuf, s, r)) return nonblocking(s, r, request);
    const int rc = blocking(s, r);
    if (rc != MPI_SUCCESS) return rc;
    auto done = std::make_shared<PendingCall>();
    done->done.store(true);
    return start_request(comm, name, std::move(done), request);
  };
}

Run queued(const char* name, MPI_Request* request) {
  Run run;
  run.blocking = false;
  run.start = [=](MPI_Comm comm, const CollArgs& args, size_t bytes, const CallBuffers& b,
                  const StagedSpans& spans, const Call& call) {
    return start_engine(comm, name, args, bytes, b, spans, call, request);
  };
  return run;
}

}  // namespace

bool queued_engine(MPI_Comm comm, const char* name, const CollArgs& args, const CallBuffers& b,
                   const StagedSpans& spans, const Call& call, Comm** ec, CallQueue** queue,
                   int* rc) {
  // Set up in the caller's thread (an exchange through MPI); the worker makes no MPI call.
  Status st = engine_comm(comm, ec, queue, /*make_queue=*/true);
  if (st.is_ok()) return true;
  *rc = st.code() == Code::kUnsupported
            ? pass(args.kind, "engine declined", comm, b, spans, call)
            : raise_error(comm, Status(st.code(), std::string(name) + ": " + st.message()));
  return false;
}

std::function<Status()> engine_work(Comm* ec, MPI_Comm comm, const CollArgs& args, size_t bytes) {
  // What the worker reads after the call returns: the arguments, and the receive counts behind
  // them.
  auto counts = std::make_shared<std::vector<size_t>>();
  CollArgs mine = args;
  if (args.recvcounts) {
    int size = 0;
    PMPI_Comm_size(comm, &size);
    counts->assign(args.recvcounts, args.recvcounts + size);
    mine.recvcounts = counts->data();
  }
  return [ec, mine, counts, bytes]() {
    const auto t0 = std::chrono::steady_clock::now();
    Status done = ec->run(mine);
    if (done.is_ok()) {
      stats_engine_call(mine.kind, bytes, std::chrono::steady_clock::now() - t0);
    } else if (done.code() == Code::kUnsupported) {
      // MPI cannot take it now (its turn in MPI's order is gone): an error, said plainly.
      done =
          Status(Code::kInternal, "efacoll declined the call after it started: " + done.message());
    }
    return done;
  };
}

}  // namespace shim
}  // namespace efacoll

using namespace efacoll;
using namespace efacoll::shim;

EFACOLL_EXPORT int MPI_Iallreduce(const void* sendbuf, void* recvbuf, int count,
                                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                  MPI_Request* request) {
  return guarded(comm, "MPI_Iallreduce", [&] {
    const char* name = "MPI_Iallreduce";
    return allreduce(name, sendbuf, recvbuf, count, datatype, op, comm,
                     through_mpi(
                         sendbuf, recvbuf, comm, name, request,
                         [=](const void* s, void* r, MPI_Request* q) {
                           return PMPI_Iallreduce(s, r, count, datatype, op, comm, q);
                         },
                         [=](const void* s, void* r) {
                           return PMPI_Allreduce(s, r, count, datatype, op, comm);
                         }),
                     queued(name, request));
  });
}

EFACOLL_EXPORT int MPI_Iallgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                  void* recvbuf, int recvcount, MPI_Datatype recvtype,
                                  MPI_Comm comm, MPI_Request* request) {
  return guarded(comm, "MPI_Iallgather", [&] {
    const char* name = "MPI_Iallgather";
    return allgather(
        name, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
        through_mpi(
            sendbuf, recvbuf, comm, name, request,
            [=](const void* s, void* r, MPI_Request* q) {
              return PMPI_Iallgather(s, sendcount, sendtype, r, recvcount, recvtype, comm, q);
            },
            [=](const void* s, void* r) {
              return PMPI_Allgather(s, sendcount, sendtype, r, recvcount, recvtype, comm);
            }),
        queued(name, request));
  });
}

EFACOLL_EXPORT int MPI_Ireduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                       MPI_Request* request) {
  return guarded(comm, "MPI_Ireduce_scatter", [&] {
    const char* name = "MPI_Ireduce_scatter";
    return reduce_scatter(name, false, sendbuf, recvbuf, recvcounts, 0, datatype, op, comm,
                          through_mpi(
                              sendbuf, recvbuf, comm, name, request,
                              [=](const void* s, void* r, MPI_Request* q) {
                                return PMPI_Ireduce_scatter(s, r, recvcounts, datatype, op, comm,
                                                            q);
                              },
                              [=](const void* s, void* r) {
                                return PMPI_Reduce_scatter(s, r, recvcounts, datatype, op, comm);
                              }),
                          queued(name, request));
  });
}

EFACOLL_EXPORT int MPI_Ireduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                             MPI_Request* request) {
  return guarded(comm, "MPI_Ireduce_scatter_block", [&] {
    const char* name = "MPI_Ireduce_scatter_block";
    return reduce_scatter<int>(
        name, true, sendbuf, recvbuf, nullptr, recvcount, datatype, op, comm,
        through_mpi(
            sendbuf, recvbuf, comm, name, request,
            [=](const void* s, void* r, MPI_Request* q) {
              return PMPI_Ireduce_scatter_block(s, r, recvcount, datatype, op, comm, q);
            },
            [=](const void* s, void* r) {
              return PMPI_Reduce_scatter_block(s, r, recvcount, datatype, op, comm);
            }),
        queued(name, request));
  });
}

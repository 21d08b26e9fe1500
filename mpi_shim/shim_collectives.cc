// MPI_Allreduce, MPI_Allgather, MPI_Reduce_scatter(_block): run by the engine when it can,
// otherwise by PMPI_* with the reason counted (GPU data staged through the host for an MPI that
// is not CUDA-aware). Bad arguments are caught first (shim_args.cc) and raised here with the
// class the standard names, before anything moves.
#include <algorithm>
#include <vector>

#include "common/log.h"
#include "mpi_shim/call_queue.h"
#include "mpi_shim/collective_bodies.h"
#include "mpi_shim/shim.h"

namespace efacoll {
namespace shim {
namespace {

// Why the engine cannot take a call with valid arguments; nullptr if it can. `route`: the way
// the communicator's ranks agreed (asked here, at every call that reaches this point, so that
// every rank counts the same calls; shim_routing.cc).
const char* route_obstacle(MPI_Comm comm, const CallBuffers& b, bool may_agree, Route* route) {
  if (!engine_active()) return "efacoll inactive";
  if (is_intercomm(comm)) return "inter-communicator";
  *route = agreed_route(comm, b, may_agree);
  if (!route->error.is_ok()) return "the ranks' agreement failed";
  if (!route->to_engine) return route->why;
  if (b.any_gpu()) {
    if (!state().engine->gpu()) return "GPU buffers without a CUDA runtime";
    if (!state().params->flag(Param::kGpu)) return "GPU buffers (EFACOLL_GPU=0)";
    if (!b.inplace() && is_gpu(b.send.kind) && is_gpu(b.recv.kind) &&
        b.send.device != b.recv.device) {
      return "buffers on two GPUs";
    }
  }
  return nullptr;
}

// Arguments are valid by now: only pairs the standard allows map to the engine's.
const char* reduction_obstacle(MPI_Datatype type, MPI_Op op, DType* dtype, ROp* rop) {
  if (map_fortran_reduction(type, op, dtype, rop)) return nullptr;
  if (!map_reduce_type(type, dtype)) return "datatype";
  if (!map_op(op, rop)) return "op";
  return nullptr;
}

}  // namespace

int pass(CollKind kind, const char* reason, MPI_Comm comm, const CallBuffers& b,
         const StagedSpans& spans, const Call& call) {
  stats_mpi_call(kind, reason);
  return staged_pmpi(comm, b, spans, call);
}

namespace {

// A call that failed the argument checks: raised by us while efacoll is active. Inactive,
// efacoll leaves MPI to judge, except where GPU buffers would reach an MPI that is not
// CUDA-aware (no stand-in buffer is safe: MPI may accept what we reject, and then use it).
int refuse(CollKind kind, const char* call_name, const ArgError& bad, MPI_Comm comm,
           const CallBuffers& b, const Call& call) {
  if (engine_active() || (b.any_gpu() && !mpi_is_cuda_aware())) {
    return raise_arg_error(comm, call_name, bad);
  }
  stats_mpi_call(kind, "invalid argument");
  return call(b.sendbuf, b.recvbuf);
}

CollArgs engine_args(CollKind kind, const CallBuffers& b, const Route& route) {
  CollArgs a;
  a.kind = kind;
  a.inplace = b.inplace();
  a.sendbuf = a.inplace ? nullptr : b.sendbuf;
  a.recvbuf = b.recvbuf;
  a.send_mem = a.inplace ? b.recv.kind : b.send.kind;
  a.recv_mem = b.recv.kind;
  a.send_buffer_id = a.inplace ? b.recv.buffer_id : b.send.buffer_id;
  a.recv_buffer_id = b.recv.buffer_id;
  a.device = is_gpu(b.recv.kind) ? b.recv.device : b.send.device;
  a.kinds = route.kinds;
  // Host data in a GPU call goes to the GPU this rank's GPU calls used (it had GPU buffers at
  // the agreement, so there is one).
  if (!b.any_gpu() && route.kinds == CallKinds::kAllGpu) a.device = std::max(route.device, 0);
  return a;
}

// Runs on the engine; a refusal before anything moved goes to MPI instead. No lock here: under
// MPI_THREAD_MULTIPLE the engine serialises its own state and lends its lock out while a call
// waits, since a lock held across a whole call deadlocks threads whose calls the ranks order
// differently (EngineConfig::concurrent).
int run_engine(MPI_Comm comm, const CollArgs& args, size_t bytes, const CallBuffers& b,
               const StagedSpans& spans, const Call& call) {
  Comm* ec = nullptr;
  CallQueue* queue = nullptr;
  Status st = engine_comm(comm, &ec, &queue);
  if (!st.is_ok() && st.code() != Code::kUnsupported) {
    st = Status(st.code(), std::string(coll_name(args.kind)) + ": " + st.message());
  }
  if (st.is_ok()) {
    auto t0 = std::chrono::steady_clock::now();
    // After this communicator's nonblocking calls made before it (call_queue.h).
    st = queue ? queue->run_in_order([&] { return ec->run(args); }) : ec->run(args);
    if (st.is_ok()) {
      stats_engine_call(args.kind, bytes, std::chrono::steady_clock::now() - t0);
      return MPI_SUCCESS;
    }
  }
  if (st.code() == Code::kUnsupported) {
    EFACOLL_TRACE(kColl, "%s goes to MPI: %s", coll_name(args.kind), st.message().c_str());
    return pass(args.kind, "engine declined", comm, b, spans, call);
  }
  return raise_error(comm, st);
}

// A reduction's end, once its arguments are checked: the route, then MPI, or the engine with its
// arguments completed by `fill` (the count or counts; it returns the elements of the call).
int run_reduction(CollKind kind, MPI_Comm comm, const CallBuffers& b, const StagedSpans& spans,
                  const Call& call, const Run& run, MPI_Datatype datatype, MPI_Op op,
                  const std::function<size_t(CollArgs*)>& fill) {
  DType dtype;
  ROp rop;
  Route route;
  const char* why = route_obstacle(comm, b, run.blocking, &route);
  if (!route.error.is_ok()) return raise_error(comm, route.error);
  if (!why) why = reduction_obstacle(datatype, op, &dtype, &rop);
  if (why) return pass(kind, why, comm, b, spans, call);
  CollArgs args = engine_args(kind, b, route);
  args.dtype = dtype;
  args.op = rop;
  const size_t elements = fill(&args);
  return run.start(comm, args, elements * dtype_size(dtype), b, spans, call);
}

}  // namespace

// The four collectives' bodies (collective_bodies.h).

int allreduce(const char* name, const void* sendbuf, void* recvbuf, MPI_Count count,
              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, const Call& call, const Run& run) {
  ReentryGuard guard;
  if (guard.reentered()) return call(sendbuf, recvbuf);
  const CallBuffers b = locate(sendbuf, recvbuf);
  const ArgError bad = check_allreduce(sendbuf, recvbuf, count, datatype, op, comm);
  if (!bad.ok()) return refuse(CollKind::kAllreduce, name, bad, comm, b, call);
  StagedSpans spans;
  spans.send = spans.recv_in = spans.recv_out = span_of(static_cast<size_t>(count), datatype);
  spans.recv_needs_input = b.inplace();
  return run_reduction(CollKind::kAllreduce, comm, b, spans, call, run, datatype, op,
                       [&](CollArgs* args) { return args->count = static_cast<size_t>(count); });
}

int allgather(const char* name, const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
              void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
              const Call& call, const Run& run) {
  ReentryGuard guard;
  if (guard.reentered()) return call(sendbuf, recvbuf);
  const CallBuffers b = locate(sendbuf, recvbuf);
  const bool inplace = b.inplace();
  const ArgError bad =
      check_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  if (!bad.ok()) return refuse(CollKind::kAllgather, name, bad, comm, b, call);
  // The receive buffer holds a block from every rank of the remote group, if inter.
  int size = 0;
  if (is_intercomm(comm)) {
    PMPI_Comm_remote_size(comm, &size);
  } else {
    PMPI_Comm_size(comm, &size);
  }
  StagedSpans spans;
  if (!inplace) spans.send = span_of(static_cast<size_t>(sendcount), sendtype);
  spans.recv_in = spans.recv_out =
      span_of(static_cast<size_t>(recvcount) * static_cast<size_t>(size), recvtype);
  spans.recv_needs_input = inplace;
  size_t esize = 0;
  Route route;
  const char* why = route_obstacle(comm, b, run.blocking, &route);
  if (!route.error.is_ok()) return raise_error(comm, route.error);
  if (!why && !plain_type_size(recvtype, &esize)) why = "datatype";
  if (!why && !inplace && (sendtype != recvtype || sendcount != recvcount)) {
    why = "send and receive types differ";
  }
  if (why) return pass(CollKind::kAllgather, why, comm, b, spans, call);
  CollArgs args = engine_args(CollKind::kAllgather, b, route);
  args.count = static_cast<size_t>(recvcount) * esize;
  args.dtype = DType::kByte;
  return run.start(comm, args, args.count * size, b, spans, call);
}

// MPI_Reduce_scatter (recvcounts), or MPI_Reduce_scatter_block (`blocked`: `block` items for
// every rank).
template <typename Count>
int reduce_scatter(const char* name, bool blocked, const void* sendbuf, void* recvbuf,
                   const Count* recvcounts, MPI_Count block, MPI_Datatype datatype, MPI_Op op,
                   MPI_Comm comm, const Call& call, const Run& run) {
  ReentryGuard guard;
  if (guard.reentered()) return call(sendbuf, recvbuf);
  const CallBuffers b = locate(sendbuf, recvbuf);
  const ArgError bad = blocked
                           ? check_reduce_scatter_block(sendbuf, recvbuf, block, datatype, op, comm)
                           : check_reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm);
  if (!bad.ok()) return refuse(CollKind::kReduceScatter, name, bad, comm, b, call);
  int size = 0, rank = 0;
  PMPI_Comm_size(comm, &size);
  PMPI_Comm_rank(comm, &rank);
  std::vector<size_t> counts;
  size_t total = 0;
  for (int i = 0; i < size; ++i) {
    counts.push_back(static_cast<size_t>(blocked ? block : recvcounts[i]));
    total += counts.back();
  }
  StagedSpans spans;
  spans.send = span_of(total, datatype);
  spans.recv_out = span_of(counts[rank], datatype);
  spans.recv_in = b.inplace() ? spans.send : spans.recv_out;
  spans.recv_needs_input = b.inplace();
  return run_reduction(CollKind::kReduceScatter, comm, b, spans, call, run, datatype, op,
                       [&](CollArgs* args) {
                         args->recvcounts = counts.data();
                         return total;
                       });
}

template int reduce_scatter(const char*, bool, const void*, void*, const int*, MPI_Count,
                            MPI_Datatype, MPI_Op, MPI_Comm, const Call&, const Run&);
template int reduce_scatter(const char*, bool, const void*, void*, const MPI_Count*, MPI_Count,
                            MPI_Datatype, MPI_Op, MPI_Comm, const Call&, const Run&);

}  // namespace shim
}  // namespace efacoll

using namespace efacoll;
using namespace efacoll::shim;

// Each entry point: its body above, and the same call through PMPI for what goes to MPI.
// No exception crosses the C boundary (raise_exception: through the communicator's handler).
// One set per count type: the ordinary forms (int) and, where the MPI defines them (MPI-4: MPICH
// 4; Open MPI 4.1 has none), the large-count forms (_c, MPI_Count).
#define EFACOLL_BLOCKING_ENTRIES(SUFFIX, COUNT)                                                   \
  EFACOLL_EXPORT int MPI_Allreduce##SUFFIX(const void* sendbuf, void* recvbuf, COUNT count,       \
                                           MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {     \
    const char* name = "MPI_Allreduce" #SUFFIX;                                                   \
    return guarded(comm, name, [&] {                                                              \
      return allreduce(                                                                           \
          name, sendbuf, recvbuf, count, datatype, op, comm,                                      \
          [&](const void* s, void* r) {                                                           \
            return PMPI_Allreduce##SUFFIX(s, r, count, datatype, op, comm);                       \
          },                                                                                      \
          Run{true, run_engine});                                                                 \
    });                                                                                           \
  }                                                                                               \
  EFACOLL_EXPORT int MPI_Allgather##SUFFIX(const void* sendbuf, COUNT sendcount,                  \
                                           MPI_Datatype sendtype, void* recvbuf, COUNT recvcount, \
                                           MPI_Datatype recvtype, MPI_Comm comm) {                \
    const char* name = "MPI_Allgather" #SUFFIX;                                                   \
    return guarded(comm, name, [&] {                                                              \
      return allgather(                                                                           \
          name, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,                 \
          [&](const void* s, void* r) {                                                           \
            return PMPI_Allgather##SUFFIX(s, sendcount, sendtype, r, recvcount, recvtype, comm);  \
          },                                                                                      \
          Run{true, run_engine});                                                                 \
    });                                                                                           \
  }                                                                                               \
  EFACOLL_EXPORT int MPI_Reduce_scatter##SUFFIX(const void* sendbuf, void* recvbuf,               \
                                                const COUNT recvcounts[], MPI_Datatype datatype,  \
                                                MPI_Op op, MPI_Comm comm) {                       \
    const char* name = "MPI_Reduce_scatter" #SUFFIX;                                              \
    return guarded(comm, name, [&] {                                                              \
      return reduce_scatter(                                                                      \
          name, false, sendbuf, recvbuf, recvcounts, 0, datatype, op, comm,                       \
          [&](const void* s, void* r) {                                                           \
            return PMPI_Reduce_scatter##SUFFIX(s, r, recvcounts, datatype, op, comm);             \
          },                                                                                      \
          Run{true, run_engine});                                                                 \
    });                                                                                           \
  }                                                                                               \
  EFACOLL_EXPORT int MPI_Reduce_scatter_block##SUFFIX(const void* sendbuf, void* recvbuf,         \
                                                      COUNT recvcount, MPI_Datatype datatype,     \
                                                      MPI_Op op, MPI_Comm comm) {                 \
    const char* name = "MPI_Reduce_scatter_block" #SUFFIX;                                        \
    return guarded(comm, name, [&] {                                                              \
      return reduce_scatter<COUNT>(                                                               \
          name, true, sendbuf, recvbuf, nullptr, recvcount, datatype, op, comm,                   \
          [&](const void* s, void* r) {                                                           \
            return PMPI_Reduce_scatter_block##SUFFIX(s, r, recvcount, datatype, op, comm);        \
          },                                                                                      \
          Run{true, run_engine});                                                                 \
    });                                                                                           \
  }

EFACOLL_BLOCKING_ENTRIES(, int)
#if MPI_VERSION >= 4
EFACOLL_BLOCKING_ENTRIES(_c, MPI_Count)
#endif

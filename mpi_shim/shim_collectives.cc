// MPI_Allreduce, MPI_Allgather, MPI_Reduce_scatter(_block): run by the engine when it can,
// otherwise by PMPI_* with the reason counted. Invalid arguments always go to PMPI_*, so the
// caller gets exactly the error class (and handler) MPI itself would give.
#include <functional>
#include <vector>

#include "common/log.h"
#include "mpi_shim/shim.h"

namespace efacoll {
namespace shim {
namespace {

bool is_intercomm(MPI_Comm comm) {
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  return inter != 0;
}

// Why a call with valid-looking arguments cannot run on the engine; nullptr if it can.
const char* common_obstacle(MPI_Comm comm) {
  if (!engine_active()) return "efacoll inactive";
  if (comm == MPI_COMM_NULL) return "invalid argument";
  if (is_intercomm(comm)) return "inter-communicator";
  if (!state().params->flag(Param::kHostBuffers)) return "host buffers";
  return nullptr;
}

const char* reduction_obstacle(MPI_Datatype type, MPI_Op op, DType* dtype, ROp* rop) {
  if (type == MPI_DATATYPE_NULL || op == MPI_OP_NULL) return "invalid argument";
  if (!map_reduce_type(type, dtype)) return "datatype";
  if (!map_op(op, rop)) return "op";
  if (!op_allowed(*dtype, *rop)) return "invalid argument";  // MPI raises MPI_ERR_OP
  return nullptr;
}

// Runs on the engine; falls back to MPI when nothing has moved yet.
template <typename Fallback>
int run_engine(MPI_Comm comm, const CollArgs& args, size_t bytes, Fallback&& fallback) {
  auto lock = engine_lock();
  Comm* ec = nullptr;
  Status st = engine_comm(comm, &ec);
  if (st.is_ok()) {
    auto t0 = std::chrono::steady_clock::now();
    st = ec->run(args);
    if (st.is_ok()) {
      stats_engine_call(args.kind, bytes, std::chrono::steady_clock::now() - t0);
      return MPI_SUCCESS;
    }
  }
  if (st.code() == Code::kUnsupported) {
    EFACOLL_TRACE(kColl, "%s goes to MPI: %s", coll_name(args.kind), st.message().c_str());
    stats_mpi_call(args.kind, "engine declined");
    lock = std::unique_lock<std::mutex>();
    return fallback();
  }
  return raise_error(comm, st);
}

}  // namespace
}  // namespace shim
}  // namespace efacoll

using namespace efacoll;
using namespace efacoll::shim;

EFACOLL_EXPORT int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count,
                                 MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  auto pmpi = [&] { return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm); };
  try {
    ReentryGuard guard;
    if (guard.reentered()) return pmpi();
    DType dtype;
    ROp rop;
    const char* why = common_obstacle(comm);
    if (!why && count < 0) why = "invalid argument";
    if (!why) why = reduction_obstacle(datatype, op, &dtype, &rop);
    if (!why && count > 0 && (recvbuf == nullptr || sendbuf == nullptr)) why = "invalid argument";
    if (why) {
      stats_mpi_call(CollKind::kAllreduce, why);
      return pmpi();
    }
    CollArgs args;
    args.kind = CollKind::kAllreduce;
    args.inplace = sendbuf == MPI_IN_PLACE;
    args.sendbuf = args.inplace ? nullptr : sendbuf;
    args.recvbuf = recvbuf;
    args.count = static_cast<size_t>(count);
    args.dtype = dtype;
    args.op = rop;
    return run_engine(comm, args, args.count * dtype_size(dtype), pmpi);
  } catch (...) {
    return MPI_ERR_INTERN;
  }
}

EFACOLL_EXPORT int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                 void* recvbuf, int recvcount, MPI_Datatype recvtype,
                                 MPI_Comm comm) {
  auto pmpi = [&] {
    return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  };
  try {
    ReentryGuard guard;
    if (guard.reentered()) return pmpi();
    const bool inplace = sendbuf == MPI_IN_PLACE;
    size_t esize = 0;
    const char* why = common_obstacle(comm);
    if (!why && (recvcount < 0 || (!inplace && sendcount < 0))) why = "invalid argument";
    if (!why && !plain_type_size(recvtype, &esize)) why = "datatype";
    if (!why && !inplace && (sendtype != recvtype || sendcount != recvcount)) {
      why = "send and receive types differ";
    }
    if (!why && recvcount > 0 && (recvbuf == nullptr || (!inplace && sendbuf == nullptr))) {
      why = "invalid argument";
    }
    if (why) {
      stats_mpi_call(CollKind::kAllgather, why);
      return pmpi();
    }
    CollArgs args;
    args.kind = CollKind::kAllgather;
    args.inplace = inplace;
    args.sendbuf = inplace ? nullptr : sendbuf;
    args.recvbuf = recvbuf;
    args.count = static_cast<size_t>(recvcount) * esize;
    args.dtype = DType::kByte;
    int size = 0;
    PMPI_Comm_size(comm, &size);
    return run_engine(comm, args, args.count * size, pmpi);
  } catch (...) {
    return MPI_ERR_INTERN;
  }
}

namespace {

int reduce_scatter(const void* sendbuf, void* recvbuf, const int* recvcounts, int block,
                   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                   const std::function<int()>& pmpi) {
  ReentryGuard guard;
  if (guard.reentered()) return pmpi();
  DType dtype;
  ROp rop;
  const char* why = common_obstacle(comm);
  int size = 0;
  if (!why) PMPI_Comm_size(comm, &size);
  if (!why) why = reduction_obstacle(datatype, op, &dtype, &rop);
  std::vector<size_t> counts;
  size_t total = 0;
  if (!why) {
    if (recvcounts == nullptr && block < 0) why = "invalid argument";
    for (int i = 0; !why && i < size; ++i) {
      int c = recvcounts ? recvcounts[i] : block;
      if (c < 0) why = "invalid argument";
      counts.push_back(static_cast<size_t>(c));
      total += static_cast<size_t>(c > 0 ? c : 0);
    }
  }
  if (!why && total > 0 && (recvbuf == nullptr || sendbuf == nullptr)) why = "invalid argument";
  if (why) {
    stats_mpi_call(CollKind::kReduceScatter, why);
    return pmpi();
  }
  CollArgs args;
  args.kind = CollKind::kReduceScatter;
  args.inplace = sendbuf == MPI_IN_PLACE;
  args.sendbuf = args.inplace ? nullptr : sendbuf;
  args.recvbuf = recvbuf;
  args.recvcounts = counts.data();
  args.dtype = dtype;
  args.op = rop;
  return run_engine(comm, args, total * dtype_size(dtype), pmpi);
}

}  // namespace

EFACOLL_EXPORT int MPI_Reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                                      MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  try {
    return reduce_scatter(sendbuf, recvbuf, recvcounts, -1, datatype, op, comm, [&] {
      return PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm);
    });
  } catch (...) {
    return MPI_ERR_INTERN;
  }
}

EFACOLL_EXPORT int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                                            MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  try {
    return reduce_scatter(sendbuf, recvbuf, nullptr, recvcount, datatype, op, comm, [&] {
      return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
    });
  } catch (...) {
    return MPI_ERR_INTERN;
  }
}

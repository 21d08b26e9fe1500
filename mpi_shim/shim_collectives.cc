// MPI_Allreduce, MPI_Allgather, MPI_Reduce_scatter(_block): run by the engine when it can,
// otherwise by PMPI_* with the reason counted (GPU data staged through the host for an MPI that
// is not CUDA-aware). Invalid arguments always go to PMPI_*, so the caller gets exactly the
// error class (and handler) MPI itself would give.
#include <vector>

#include "common/log.h"
#include "mpi_shim/shim.h"

namespace efacoll {
namespace shim {
namespace {

constexpr const char* kInvalidArgument = "invalid argument";
using Call = std::function<int(const void*, void*)>;

bool is_intercomm(MPI_Comm comm) {
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  return inter != 0;
}

// Why the engine cannot take a call with valid arguments; nullptr if it can.
const char* route_obstacle(MPI_Comm comm, const CallBuffers& b) {
  if (!engine_active()) return "efacoll inactive";
  if (is_intercomm(comm)) return "inter-communicator";
  if (b.any_gpu()) {
    if (!state().engine->gpu()) return "GPU buffers without a CUDA runtime";
    if (!state().params->flag(Param::kGpu)) return "GPU buffers (EFACOLL_GPU=0)";
    if (!b.inplace() && is_gpu(b.send.kind) && is_gpu(b.recv.kind) &&
        b.send.device != b.recv.device) {
      return "buffers on two GPUs";
    }
    return nullptr;
  }
  if (!state().params->flag(Param::kHostBuffers)) return "host buffers";
  return nullptr;
}

const char* reduction_obstacle(MPI_Datatype type, MPI_Op op, DType* dtype, ROp* rop) {
  if (!map_reduce_type(type, dtype)) return "datatype";
  if (!map_op(op, rop)) return "op";
  if (!op_allowed(*dtype, *rop)) return kInvalidArgument;  // MPI raises MPI_ERR_OP
  return nullptr;
}

int pass(CollKind kind, const char* reason, MPI_Comm comm, const CallBuffers& b,
         const StagedSpans& spans, const Call& call) {
  stats_mpi_call(kind, reason);
  if (reason == kInvalidArgument && b.any_gpu() && !mpi_is_cuda_aware()) {
    // MPI rejects the arguments before touching data; still, never hand it a device pointer.
    static char dummy[64];
    return call(b.inplace() ? MPI_IN_PLACE : dummy, dummy);
  }
  return staged_pmpi(comm, b, spans, call);
}

CollArgs engine_args(CollKind kind, const CallBuffers& b) {
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
  return a;
}

// Runs on the engine; a refusal before anything moved goes to MPI instead.
int run_engine(MPI_Comm comm, const CollArgs& args, size_t bytes, const CallBuffers& b,
               const StagedSpans& spans, const Call& call) {
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
    lock = std::unique_lock<std::mutex>();
    return pass(args.kind, "engine declined", comm, b, spans, call);
  }
  return raise_error(comm, st);
}

int reduce_scatter(const void* sendbuf, void* recvbuf, const int* recvcounts, int block,
                   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, const Call& call) {
  ReentryGuard guard;
  if (guard.reentered()) return call(sendbuf, recvbuf);
  const CallBuffers b = locate(sendbuf, recvbuf);
  int size = 0, rank = 0;
  const char* why = nullptr;
  if (comm == MPI_COMM_NULL || datatype == MPI_DATATYPE_NULL || op == MPI_OP_NULL ||
      (recvcounts == nullptr && block < 0)) {
    why = kInvalidArgument;
  } else {
    PMPI_Comm_size(comm, &size);
    PMPI_Comm_rank(comm, &rank);
  }
  std::vector<size_t> counts;
  size_t total = 0;
  for (int i = 0; !why && i < size; ++i) {
    int c = recvcounts ? recvcounts[i] : block;
    if (c < 0) why = kInvalidArgument;
    counts.push_back(static_cast<size_t>(c));
    total += static_cast<size_t>(c > 0 ? c : 0);
  }
  if (!why && total > 0 && (recvbuf == nullptr || sendbuf == nullptr)) why = kInvalidArgument;
  StagedSpans spans;
  if (!why) {
    spans.send = span_of(static_cast<int>(total), datatype);
    spans.recv_out = span_of(static_cast<int>(counts[rank]), datatype);
    spans.recv_in = b.inplace() ? spans.send : spans.recv_out;
    spans.recv_needs_input = b.inplace();
  }
  DType dtype;
  ROp rop;
  if (!why) why = route_obstacle(comm, b);
  if (!why) why = reduction_obstacle(datatype, op, &dtype, &rop);
  if (why) return pass(CollKind::kReduceScatter, why, comm, b, spans, call);
  CollArgs args = engine_args(CollKind::kReduceScatter, b);
  args.recvcounts = counts.data();
  args.dtype = dtype;
  args.op = rop;
  return run_engine(comm, args, total * dtype_size(dtype), b, spans, call);
}

}  // namespace
}  // namespace shim
}  // namespace efacoll

using namespace efacoll;
using namespace efacoll::shim;

EFACOLL_EXPORT int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count,
                                 MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  Call call = [&](const void* s, void* r) {
    return PMPI_Allreduce(s, r, count, datatype, op, comm);
  };
  try {
    ReentryGuard guard;
    if (guard.reentered()) return call(sendbuf, recvbuf);
    const CallBuffers b = locate(sendbuf, recvbuf);
    const char* why = nullptr;
    if (comm == MPI_COMM_NULL || count < 0 || datatype == MPI_DATATYPE_NULL || op == MPI_OP_NULL ||
        (count > 0 && (recvbuf == nullptr || sendbuf == nullptr))) {
      why = kInvalidArgument;
    }
    StagedSpans spans;
    if (!why) {
      spans.send = spans.recv_in = spans.recv_out = span_of(count, datatype);
      spans.recv_needs_input = b.inplace();
    }
    DType dtype;
    ROp rop;
    if (!why) why = route_obstacle(comm, b);
    if (!why) why = reduction_obstacle(datatype, op, &dtype, &rop);
    if (why) return pass(CollKind::kAllreduce, why, comm, b, spans, call);
    CollArgs args = engine_args(CollKind::kAllreduce, b);
    args.count = static_cast<size_t>(count);
    args.dtype = dtype;
    args.op = rop;
    return run_engine(comm, args, args.count * dtype_size(dtype), b, spans, call);
  } catch (...) {
    return MPI_ERR_INTERN;
  }
}

EFACOLL_EXPORT int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                 void* recvbuf, int recvcount, MPI_Datatype recvtype,
                                 MPI_Comm comm) {
  Call call = [&](const void* s, void* r) {
    return PMPI_Allgather(s, sendcount, sendtype, r, recvcount, recvtype, comm);
  };
  try {
    ReentryGuard guard;
    if (guard.reentered()) return call(sendbuf, recvbuf);
    const CallBuffers b = locate(sendbuf, recvbuf);
    const bool inplace = b.inplace();
    const char* why = nullptr;
    if (comm == MPI_COMM_NULL || recvcount < 0 || recvtype == MPI_DATATYPE_NULL ||
        (!inplace && (sendcount < 0 || sendtype == MPI_DATATYPE_NULL)) ||
        (recvcount > 0 && (recvbuf == nullptr || (!inplace && sendbuf == nullptr)))) {
      why = kInvalidArgument;
    }
    int size = 0;
    StagedSpans spans;
    if (!why) {
      PMPI_Comm_size(comm, &size);
      if (!inplace) spans.send = span_of(sendcount, sendtype);
      spans.recv_in = spans.recv_out = span_of(recvcount * size, recvtype);
      spans.recv_needs_input = inplace;
    }
    size_t esize = 0;
    if (!why) why = route_obstacle(comm, b);
    if (!why && !plain_type_size(recvtype, &esize)) why = "datatype";
    if (!why && !inplace && (sendtype != recvtype || sendcount != recvcount)) {
      why = "send and receive types differ";
    }
    if (why) return pass(CollKind::kAllgather, why, comm, b, spans, call);
    CollArgs args = engine_args(CollKind::kAllgather, b);
    args.count = static_cast<size_t>(recvcount) * esize;
    args.dtype = DType::kByte;
    return run_engine(comm, args, args.count * size, b, spans, call);
  } catch (...) {
    return MPI_ERR_INTERN;
  }
}

EFACOLL_EXPORT int MPI_Reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                                      MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  try {
    return reduce_scatter(sendbuf, recvbuf, recvcounts, -1, datatype, op, comm,
                          [&](const void* s, void* r) {
                            return PMPI_Reduce_scatter(s, r, recvcounts, datatype, op, comm);
                          });
  } catch (...) {
    return MPI_ERR_INTERN;
  }
}

EFACOLL_EXPORT int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                                            MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  try {
    return reduce_scatter(sendbuf, recvbuf, nullptr, recvcount, datatype, op, comm,
                          [&](const void* s, void* r) {
                            return PMPI_Reduce_scatter_block(s, r, recvcount, datatype, op, comm);
                          });
  } catch (...) {
    return MPI_ERR_INTERN;
  }
}

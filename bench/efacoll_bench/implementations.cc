#include "implementations.h"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "device.h"

namespace efacoll_bench {
namespace {

// MPI_* and PMPI_* side by side: the same call reaches efacoll through one, the host MPI through
// the other.
struct MpiEntryPoints {
  int (*allreduce)(const void*, void*, int, MPI_Datatype, MPI_Op, MPI_Comm);
  int (*allgather)(const void*, int, MPI_Datatype, void*, int, MPI_Datatype, MPI_Comm);
  int (*reduce_scatter)(const void*, void*, const int[], MPI_Datatype, MPI_Op, MPI_Comm);
  int (*reduce_scatter_block)(const void*, void*, int, MPI_Datatype, MPI_Op, MPI_Comm);
};
const MpiEntryPoints kEfacollEntry = {MPI_Allreduce, MPI_Allgather, MPI_Reduce_scatter,
                                      MPI_Reduce_scatter_block};
const MpiEntryPoints kHostMpiEntry = {PMPI_Allreduce, PMPI_Allgather, PMPI_Reduce_scatter,
                                      PMPI_Reduce_scatter_block};

// In the enums' order. Function-local: some MPIs' handles are not constants.
MPI_Datatype mpi_type(DataType t) {
  static const MPI_Datatype kTypes[] = {MPI_INT8_T,  MPI_UINT8_T,  MPI_INT32_T, MPI_UINT32_T,
                                        MPI_INT64_T, MPI_UINT64_T, MPI_FLOAT,   MPI_DOUBLE};
  return kTypes[static_cast<int>(t)];
}

MPI_Op mpi_op(ReduceOp op) {
  static const MPI_Op kOps[] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, MPI_BAND, MPI_BOR, MPI_BXOR};
  return kOps[static_cast<int>(op)];
}

void mpi_call(const CallSetup& s, const MpiEntryPoints& mpi, const CallLayout& l, size_t count) {
  // MPI_Reduce_scatter's counts, kept between calls: no allocation in the timed loop.
  static std::vector<int> recvcounts;
  const int n = static_cast<int>(count);
  const void* send = l.send ? l.send : MPI_IN_PLACE;
  const MPI_Datatype type = mpi_type(s.options.type);
  const MPI_Op op = mpi_op(s.options.op);
  int rc = MPI_SUCCESS;
  switch (s.options.collective) {
    case Collective::kAllreduce:
      rc = mpi.allreduce(send, l.recv, n, type, op, MPI_COMM_WORLD);
      break;
    case Collective::kAllgather:
      rc = mpi.allgather(send, n, type, l.recv, n, type, MPI_COMM_WORLD);
      break;
    case Collective::kReduceScatter:
      recvcounts.assign(s.nranks, n);
      rc = mpi.reduce_scatter(send, l.recv, recvcounts.data(), type, op, MPI_COMM_WORLD);
      break;
    case Collective::kReduceScatterBlock:
      rc = mpi.reduce_scatter_block(send, l.recv, n, type, op, MPI_COMM_WORLD);
      break;
  }
  if (rc != MPI_SUCCESS)
    fail(collective_name(s.options.collective), "MPI error " + std::to_string(rc));
}

// Through pinned host memory, both copies timed: what a program without a CUDA-aware MPI does.
void staged_host_mpi_call(const CallSetup& s, size_t count) {
  const CallLayout gpu = s.buffers->layout(count, InPlaceStyle::kMpi);
  const CallLayout host = s.buffers->staging_layout(count);
  if (!s.buffers->stage_in(gpu, host)) fail("copy to the host", gpu_last_error());
  mpi_call(s, kHostMpiEntry, host, count);
  if (!s.buffers->stage_out(host, gpu)) fail("copy to the GPU", gpu_last_error());
}

int nccl_type(DataType t) {
  static const int kTypes[] = {kNcclInt8,  kNcclUint8,  kNcclInt32,   kNcclUint32,
                               kNcclInt64, kNcclUint64, kNcclFloat32, kNcclFloat64};
  return kTypes[static_cast<int>(t)];
}

int nccl_op(ReduceOp op) {
  static const int kOps[] = {kNcclSum, kNcclProd, kNcclMax, kNcclMin};
  return kOps[static_cast<int>(op)];  // bitwise ops never get here: NCCL has none
}

void nccl_call(const CallSetup& s, size_t count) {
  const NcclLibrary& nccl = *s.nccl;
  const CallLayout l = s.buffers->layout(count, InPlaceStyle::kNccl);
  const int type = nccl_type(s.options.type);
  ncclResult_t rc = kNcclSuccess;
  if (s.options.collective == Collective::kAllreduce) {
    rc = nccl.all_reduce(l.send, l.recv, count, type, nccl_op(s.options.op), nccl.comm,
                         s.nccl_stream);
  } else if (s.options.collective == Collective::kAllgather) {
    rc = nccl.all_gather(l.send, l.recv, count, type, nccl.comm, s.nccl_stream);
  } else {
    rc = nccl.reduce_scatter(l.send, l.recv, count, type, nccl_op(s.options.op), nccl.comm,
                             s.nccl_stream);
  }
  if (rc != kNcclSuccess) fail(collective_name(s.options.collective), nccl.error_text(rc));
  if (!gpu_stream_synchronize(s.nccl_stream)) fail("cudaStreamSynchronize", gpu_last_error());
}

}  // namespace

[[noreturn]] void fail(const char* what, const std::string& detail) {
  int rank = -1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::fprintf(stderr, "efacoll-bench: rank %d: %s failed: %s\n", rank, what, detail.c_str());
  PMPI_Abort(MPI_COMM_WORLD, 2);
  std::abort();
}

void run_call(const CallSetup& s, Impl impl, size_t count) {
  switch (impl) {
    case Impl::kEfacoll:
      mpi_call(s, kEfacollEntry, s.buffers->layout(count, InPlaceStyle::kMpi), count);
      break;
    case Impl::kHostMpi:
      if (s.host_mpi_staged) {
        staged_host_mpi_call(s, count);
      } else {
        mpi_call(s, kHostMpiEntry, s.buffers->layout(count, InPlaceStyle::kMpi), count);
      }
      break;
    case Impl::kNccl:
      nccl_call(s, count);
      break;
  }
}

}  // namespace efacoll_bench

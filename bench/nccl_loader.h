// NCCL at run time: the benchmarks dlopen libnccl.so.2 where it is installed and need nothing of
// NCCL (nor of CUDA, here) to build. This is the slice of NCCL's nccl.h they use, values as in
// NCCL 2.x, and one communicator over MPI_COMM_WORLD set up through PMPI.
#ifndef EFACOLL_BENCH_NCCL_LOADER_H
#define EFACOLL_BENCH_NCCL_LOADER_H

#include <cstddef>
#include <string>

using ncclResult_t = int;
using ncclComm_t = struct ncclComm*;
struct ncclUniqueId {
  char internal[128];
};
// cudaStream_t is a pointer: callers pass theirs, and no CUDA header is needed here.
using NcclStream = void*;

enum NcclDataType : int {
  kNcclInt8 = 0,
  kNcclUint8 = 1,
  kNcclInt32 = 2,
  kNcclUint32 = 3,
  kNcclInt64 = 4,
  kNcclUint64 = 5,
  kNcclFloat32 = 7,
  kNcclFloat64 = 8,
};
enum NcclRedOp : int { kNcclSum = 0, kNcclProd = 1, kNcclMax = 2, kNcclMin = 3 };
constexpr ncclResult_t kNcclSuccess = 0;

struct NcclLibrary {
  ncclResult_t (*get_unique_id)(ncclUniqueId*) = nullptr;
  ncclResult_t (*comm_init_rank)(ncclComm_t*, int, ncclUniqueId, int) = nullptr;
  ncclResult_t (*all_reduce)(const void*, void*, size_t, int, int, ncclComm_t,
                             NcclStream) = nullptr;
  ncclResult_t (*all_gather)(const void*, void*, size_t, int, ncclComm_t, NcclStream) = nullptr;
  ncclResult_t (*reduce_scatter)(const void*, void*, size_t, int, int, ncclComm_t,
                                 NcclStream) = nullptr;
  ncclResult_t (*comm_destroy)(ncclComm_t) = nullptr;
  const char* (*error_string)(ncclResult_t) = nullptr;
  ncclResult_t (*get_version)(int*) = nullptr;
  ncclComm_t comm = nullptr;  // after init_nccl_world
  std::string version;        // "2.28.3", after init_nccl_world

  const char* error_text(ncclResult_t rc) const {
    return error_string ? error_string(rc) : "NCCL error";
  }
};

// Loads libnccl.so.2 from the system library path. Collective over MPI_COMM_WORLD: true only if
// every rank has it, so that a library missing on one rank never leaves the others waiting.
bool load_nccl_on_every_rank(NcclLibrary* nccl);

// One communicator over MPI_COMM_WORLD: the unique id from rank 0, broadcast with PMPI_Bcast.
// Collective; false, with *error, when it failed on any rank.
bool init_nccl_world(NcclLibrary* nccl, std::string* error);

#endif

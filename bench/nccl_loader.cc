#include "nccl_loader.h"

#include <dlfcn.h>
#include <mpi.h>

#include <cstring>
#include <type_traits>

namespace {

bool agreed_by_every_rank(bool mine) {
  int in = mine ? 1 : 0, all = 0;
  PMPI_Allreduce(&in, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

}  // namespace

bool load_nccl_on_every_rank(NcclLibrary* n) {
  void* lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  bool ok = lib != nullptr;
  auto sym = [&](auto* fn, const char* name) {
    *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(lib ? dlsym(lib, name) : nullptr);
    ok = ok && *fn != nullptr;
  };
  sym(&n->get_unique_id, "ncclGetUniqueId");
  sym(&n->comm_init_rank, "ncclCommInitRank");
  sym(&n->all_reduce, "ncclAllReduce");
  sym(&n->all_gather, "ncclAllGather");
  sym(&n->reduce_scatter, "ncclReduceScatter");
  sym(&n->comm_destroy, "ncclCommDestroy");
  sym(&n->error_string, "ncclGetErrorString");
  sym(&n->get_version, "ncclGetVersion");
  return agreed_by_every_rank(ok);
}

bool init_nccl_world(NcclLibrary* n, std::string* error) {
  int rank = 0, nranks = 1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &nranks);
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  int rc = rank == 0 ? n->get_unique_id(&id) : kNcclSuccess;
  PMPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rc != kNcclSuccess) {
    *error = std::string("ncclGetUniqueId: ") + n->error_text(rc);
    return false;
  }
  PMPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  rc = n->comm_init_rank(&n->comm, nranks, id, rank);
  if (!agreed_by_every_rank(rc == kNcclSuccess)) {
    *error = std::string("ncclCommInitRank: ") +
             (rc != kNcclSuccess ? n->error_text(rc) : "failed on another rank");
    return false;
  }
  int v = 0;
  n->get_version(&v);
  // X*10000 + Y*100 + Z since 2.9 (older ones print oddly, which is harmless here).
  n->version = std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
               std::to_string(v % 100);
  return true;
}

// efacoll_mpi_gpu_tests: ranks that make different calls on GPU buffers inside one node (the CUDA
// IPC protocols, where peers read and write each other's memory). Every rank must return an
// error that says the calls differ, before any rank reaches past what a peer gave it; the next
// valid call on the communicator must work; and what the failed calls retired must be freed
// once their leftovers are dropped and answered.
#include <dlfcn.h>

#include <cstring>

#include "mpi_gpu_cases.h"

namespace gputest {
namespace {

constexpr int kItems = 1 << 20;  // ints: 4 MiB, above the low-latency protocol's sizes

struct Odd {
  const char* id;
  Coll coll;
  MPI_Datatype type;  // rank 1's; the others call with MPI_INT and MPI_SUM
  MPI_Op op;
  int count;  // rank 1's; the others' is kItems (allgather: kItems / 8 a rank)
};

// A failed call's leftovers are dropped, and its unanswered clear-to-sends answered, 32 calls on
// (engine/comm_stale.cc), where the provider can peek. Then no memory the mismatches retired may
// still be held: checked on tcp. (shm cannot peek; udp;ofi_rxd cannot cancel a receive it has
// begun to match, and the memory stays retired while the provider holds it.)
void expect_retired_memory_freed(const CommUnderTest& cu) {
  for (int call = 1; call <= 40; ++call) {
    Case ok = make_case(Coll::kAllreduce, type_named("MPI_INT"), Op::kSum, 1001, false, cu);
    ok.label = "after the mismatches, call " + std::to_string(call);
    run_case(ok);
  }
  auto usage = reinterpret_cast<int (*)(efacoll_resource_usage*)>(
      dlsym(RTLD_DEFAULT, "efacoll_get_resource_usage"));
  auto provider = reinterpret_cast<const char* (*)()>(dlsym(RTLD_DEFAULT, "efacoll_provider"));
  efacoll_resource_usage u = {};
  if (!usage || !provider || usage(&u) != 0) return;  // efacoll not preloaded
  const std::string prov = provider() ? provider() : "";
  if (prov.rfind("tcp", 0) != 0) return;
  check(u.retired_bytes_held == 0, "mismatch " + cu.name + ": retired memory freed",
        std::to_string(u.retired_bytes_held) + " B still held of " +
            std::to_string(u.retired_bytes_total) + " B retired");
}

}  // namespace

void mismatched_calls(const CommUnderTest& cu) {
  if (cu.size < 2) return;
  const Odd odds[] = {
      {"op", Coll::kAllreduce, MPI_INT, MPI_MAX, kItems},
      {"type", Coll::kAllreduce, MPI_FLOAT, MPI_SUM, kItems},
      {"count", Coll::kAllreduce, MPI_INT, MPI_SUM, kItems / 2},
      {"allgather count", Coll::kAllgather, MPI_INT, MPI_OP_NULL, kItems / 4},
  };
  TestBuf send, recv;
  const size_t bytes = static_cast<size_t>(kItems) * sizeof(int) * cu.size;
  std::string err = send.allocate(Where::kDevice, 0, bytes);
  if (err.empty()) err = recv.allocate(Where::kDevice, 0, bytes);
  if (!check(err.empty(), "mismatch " + cu.name, "setup: " + err)) return;
  for (const Odd& odd : odds) {
    const std::string name = std::string("mismatch ") + cu.name + ": rank 1's " + odd.id;
    if (filtered_out(name)) continue;
    const bool me = cu.rank == 1;
    int rc;
    if (odd.coll == Coll::kAllgather) {
      const int n = me ? odd.count : kItems / 8;
      rc = MPI_Allgather(send.ptr(), n, MPI_INT, recv.ptr(), n, MPI_INT, cu.comm);
    } else {
      rc = MPI_Allreduce(send.ptr(), recv.ptr(), me ? odd.count : kItems, me ? odd.type : MPI_INT,
                         me ? odd.op : MPI_SUM, cu.comm);
    }
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (rc != MPI_SUCCESS) MPI_Error_string(rc, text, &len);
    if (check(rc != MPI_SUCCESS, name, "returned MPI_SUCCESS")) {
      check(std::strstr(text, "every rank must make the same call") != nullptr, name,
            std::string("error string \"") + text + "\" does not say the calls differ");
    }
    Case ok = make_case(Coll::kAllreduce, type_named("MPI_INT"), Op::kSum, 1001, false, cu);
    ok.label = std::string("after rank 1's ") + odd.id;
    run_case(ok);
  }
  expect_retired_memory_freed(cu);
}

}  // namespace gputest

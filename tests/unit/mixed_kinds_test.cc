// Calls whose buffers lie on GPUs on some ranks and on the host on others: with the kinds the
// ranks agreed (CollArgs::kinds, as the MPI shim sets them), every rank takes the same path and
// adapts its own data, so the results are right whatever each rank passes. Ranks are threads
// with a host "GPU" runtime that offers CUDA IPC and the low-latency protocol between them, so a
// GPU call can take any node path.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "host_gpu_runtime.h"
#include "reference.h"
#include "thread_ranks.h"

namespace efacoll {
namespace {

using testing::Bytes;
using testing::HostGpuRuntime;

constexpr int kRanks = 3;

struct Placement {
  CallKinds kinds;
  std::vector<bool> on_gpu;  // by rank: this rank's buffers are "device" memory
  const char* name;
};

// One checked call of `kind` with `count` int32 elements (allreduce), per rank (allgather), or
// in all (reduce-scatter, split evenly but the last block larger).
std::string one_call(Comm& comm, int rank, CollKind kind, size_t count, const Placement& p) {
  const DType type = DType::kInt32;
  const ROp op = ROp::kSum;
  std::vector<size_t> counts(kRanks, count / kRanks);
  counts.back() += count % kRanks;
  size_t first = 0;
  for (int r = 0; r < rank; ++r) first += counts[r];
  Bytes send, want;
  size_t recv_elems = count;
  if (kind == CollKind::kAllgather) {
    send = testing::make_input(type, op, rank, count);
    for (int r = 0; r < kRanks; ++r) {
      const Bytes part = testing::make_input(type, op, r, count);
      want.insert(want.end(), part.begin(), part.end());
    }
    recv_elems = count * kRanks;
  } else {
    send = testing::make_input(type, op, rank, count);
    want = testing::expected_reduction(type, op, kRanks, count);
    if (kind == CollKind::kReduceScatter) {
      want = Bytes(want.begin() + first * 4, want.begin() + (first + counts[rank]) * 4);
      recv_elems = counts[rank];
    }
  }
  Bytes recv(recv_elems * 4, 0x5a);
  CollArgs a;
  a.kind = kind;
  a.sendbuf = send.data();
  a.recvbuf = recv.data();
  a.count = count;
  a.recvcounts = counts.data();
  a.dtype = type;
  a.op = op;
  a.send_mem = a.recv_mem = p.on_gpu[rank] ? MemKind::kDevice : MemKind::kHost;
  a.device = 0;
  a.kinds = p.kinds;
  const Status st = comm.run(a);
  if (!st.is_ok()) return st.to_string();
  return testing::compare(recv, want, type);
}

TEST(MixedKinds, EveryPlacementAgreedByTheRanksGivesTheReferenceOnEveryPath) {
  auto counts = std::make_shared<HostGpuRuntime::Counts>();
  testing::RankSetup setup;
  setup.config.timeout = std::chrono::milliseconds(20000);
  setup.gpu = [counts](int) {
    return std::make_unique<HostGpuRuntime>(counts, /*in_process_ipc=*/true);
  };
  const std::vector<Placement> placements = {
      {CallKinds::kMixed, {false, true, true}, "mixed, rank 0 on the host"},
      {CallKinds::kMixed, {true, false, false}, "mixed, rank 0 on a GPU"},
      // Agreed earlier; since then one rank's buffers moved.
      {CallKinds::kAllGpu, {true, false, true}, "agreed all GPU, rank 1 on the host"},
      {CallKinds::kAllHost, {false, false, true}, "agreed all host, rank 2 on a GPU"},
      {CallKinds::kAllGpu, {true, true, true}, "all GPU"},
      {CallKinds::kAllHost, {false, false, false}, "all host"},
  };
  // 48 elements: the low-latency kernel's size where all are GPU calls; 200000: IPC or the
  // staged fabric.
  const size_t sizes[] = {48, 200000};
  const CollKind kinds[] = {CollKind::kAllreduce, CollKind::kAllgather, CollKind::kReduceScatter};
  auto failures = testing::run_ranks(kRanks, setup, [&](testing::RankContext& c) {
    // Several placements in turn on one communicator: the paths' sequences stay in step.
    for (const Placement& p : placements) {
      for (CollKind kind : kinds) {
        for (size_t n : sizes) {
          const std::string err = one_call(c.comm, c.rank, kind, n, p);
          if (!err.empty()) {
            c.failures->push_back(std::string(p.name) + ", " + coll_name(kind) + " of " +
                                  std::to_string(n) + ": " + err);
          }
        }
      }
    }
  });
  for (const std::string& f : failures) ADD_FAILURE() << f;
  EXPECT_GT(counts->ll_calls.load(), 0) << "no call took the low-latency kernel";
}

}  // namespace
}  // namespace efacoll

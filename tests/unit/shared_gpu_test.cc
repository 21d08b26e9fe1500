// Ranks that share a GPU (tune/shared_gpu_paths.h): the choice between IPC direct and the fabric
// follows the times measured on the communicator, and results stay exact either way. The ranks
// are threads of one process over the host runtime, which reports one GPU for all and sleeps
// where processes would wait for their turn on it.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "host_gpu_runtime.h"
#include "reference.h"
#include "thread_ranks.h"
#include "tune/shared_gpu_paths.h"

namespace efacoll {
namespace testing {
namespace {

struct Waits {
  std::chrono::microseconds synchronize{0}, pinned_copy{0};
};

// `refusing_rank`'s runtime (-1: none) fails device allocations of `refused_bytes`.
RankSetup shared_gpu_setup(Waits waits, int refusing_rank = -1, size_t refused_bytes = 0) {
  RankSetup setup;
  setup.config.chunk_bytes = 16384;
  setup.config.timeout = std::chrono::milliseconds(20000);  // a deadlock fails, not hangs
  auto counts = std::make_shared<HostGpuRuntime::Counts>();
  setup.gpu = [counts, waits, refusing_rank, refused_bytes](int rank) {
    auto rt = std::make_unique<HostGpuRuntime>(counts, /*in_process_ipc=*/true);
    rt->one_shared_gpu = true;
    rt->synchronize_wait = waits.synchronize;
    rt->pinned_copy_wait = waits.pinned_copy;
    if (rank == refusing_rank) rt->refuse_device_bytes = refused_bytes;
    return rt;
  };
  return setup;
}

bool ran_ipc_direct(const Engine& engine) {
  return std::strcmp(engine.last_algorithm(), "IPC direct") == 0;
}

// Processes that take turns on the GPU: IPC direct first synchronizes with the device, which
// here waits 30 ms for a turn (host memory cannot be exported, so it then takes its rounds
// through the IPC workspaces); the host path does not. So calls of every size measured go
// through the fabric: pinned host copies up to EFACOLL_GPU_HOST_PATH_MAX, the staged fabric past
// it.
TEST(SharedGpu, IpcDirectSlowedByTurnsGivesWayToTheFabric) {
  Waits waits;
  waits.synchronize = std::chrono::milliseconds(30);
  const int n = 3;
  const auto failures = run_ranks(n, shared_gpu_setup(waits), [&](RankContext& c) {
    for (size_t count : {size_t(256), size_t(4096), size_t(50000)}) {
      const std::string wrong =
          check_allreduce_in_place(c.comm, c.rank, n, count, MemKind::kDevice);
      if (!wrong.empty())
        c.failures->push_back("allreduce " + std::to_string(count) + ": " + wrong);
      if (ran_ipc_direct(c.engine))
        c.failures->push_back("allreduce " + std::to_string(count) + " ran IPC direct");
      const std::string gathered = check_allgather(c.comm, c.rank, n, count / n, MemKind::kDevice);
      if (!gathered.empty())
        c.failures->push_back("allgather " + std::to_string(count) + ": " + gathered);
      if (ran_ipc_direct(c.engine))
        c.failures->push_back("allgather " + std::to_string(count) + " ran IPC direct");
    }
  });
  for (const auto& f : failures) ADD_FAILURE() << f;
}

// Copies through pinned host memory that wait for a turn (10 ms each): the host path makes two a
// call (in and out), IPC direct none, so IPC direct takes the small calls that the host path
// would take without the measurement.
TEST(SharedGpu, SlowCopiesKeepSmallCallsOnIpcDirect) {
  Waits waits;
  waits.pinned_copy = std::chrono::milliseconds(10);
  const int n = 2;
  const auto failures = run_ranks(n, shared_gpu_setup(waits), [&](RankContext& c) {
    for (size_t count : {size_t(64), size_t(1000)}) {
      const std::string wrong =
          check_allreduce_in_place(c.comm, c.rank, n, count, MemKind::kDevice);
      if (!wrong.empty()) c.failures->push_back(std::to_string(count) + ": " + wrong);
      if (!ran_ipc_direct(c.engine)) {
        c.failures->push_back(std::to_string(count) + " ran " + c.engine.last_algorithm() +
                              ", not IPC direct");
      }
    }
  });
  for (const auto& f : failures) ADD_FAILURE() << f;
}

// An int32 sum reduce-scatter of `count` elements a rank on "GPU" buffers, in place or not,
// checked against expected_reduction: "" when exact.
std::string check_reduce_scatter(Comm& comm, int rank, int nranks, size_t count, bool inplace) {
  const size_t whole = count * nranks;
  Bytes input = make_input(DType::kInt32, ROp::kSum, rank, whole);
  Bytes recv(inplace ? input.size() : count * sizeof(int32_t), 0x5a);
  if (inplace) recv = input;
  const Bytes all = expected_reduction(DType::kInt32, ROp::kSum, nranks, whole);
  const Bytes want(all.begin() + rank * count * sizeof(int32_t),
                   all.begin() + (rank + 1) * count * sizeof(int32_t));
  std::vector<size_t> counts(nranks, count);
  CollArgs a;
  a.kind = CollKind::kReduceScatter;
  a.inplace = inplace;
  a.sendbuf = inplace ? nullptr : input.data();
  a.recvbuf = recv.data();
  a.recvcounts = counts.data();
  a.count = count;
  a.dtype = DType::kInt32;
  a.op = ROp::kSum;
  a.send_mem = a.recv_mem = MemKind::kDevice;
  a.device = 0;
  const Status st = comm.run(a);
  if (!st.is_ok()) return st.to_string();
  recv.resize(want.size());
  return compare(recv, want, DType::kInt32);
}

// IPC direct waits 20 ms for a turn on the GPU, its rounds do not (the host runtime cannot
// export host memory, so IPC direct also ends in rounds, after the wait); pinned host copies wait
// 5 ms each, two a call. Small reduce-scatters out of place go through the host copies (10 ms
// against 20); in place they take IPC's rounds, measured apart (before, priced by IPC direct's
// times, they went through the host copies too).
TEST(SharedGpu, InPlaceReduceScatterIsPricedByIpcRounds) {
  Waits waits;
  waits.synchronize = std::chrono::milliseconds(20);
  waits.pinned_copy = std::chrono::milliseconds(5);
  const int n = 2;
  const size_t count = 1000;
  const auto failures = run_ranks(n, shared_gpu_setup(waits), [&](RankContext& c) {
    for (bool inplace : {false, true}) {
      const std::string how = inplace ? "in place" : "out of place";
      const std::string wrong = check_reduce_scatter(c.comm, c.rank, n, count, inplace);
      if (!wrong.empty()) c.failures->push_back(how + ": " + wrong);
      const std::string ran = c.engine.last_algorithm();
      const bool on_ipc = ran == "IPC direct" || ran == "IPC rounds";
      if (inplace ? ran != "IPC rounds" : on_ipc) c.failures->push_back(how + " ran " + ran);
    }
  });
  for (const auto& f : failures) ADD_FAILURE() << f;
}

// On 2 ranks, an allreduce of 1,000 and one of 50,000 int32 checked, each run as the rule says
// where nothing is measured: through host copies where a rank moves at most
// EFACOLL_GPU_HOST_PATH_MAX bytes, else IPC direct.
std::vector<std::string> run_under_the_rule(const RankSetup& setup) {
  const int n = 2;
  return run_ranks(n, setup, [&](RankContext& c) {
    for (size_t count : {size_t(1000), size_t(50000)}) {
      const std::string wrong =
          check_allreduce_in_place(c.comm, c.rank, n, count, MemKind::kDevice);
      if (!wrong.empty()) c.failures->push_back(std::to_string(count) + ": " + wrong);
      const bool small = count * sizeof(int32_t) * 2 <= setup.config.gpu_host_path_max;
      if (ran_ipc_direct(c.engine) == small)
        c.failures->push_back(std::to_string(count) + " ran " + c.engine.last_algorithm());
    }
  });
}

// With the tuner off (EFACOLL_TUNE=off) nothing is measured and the rule stands, slow host copies
// or not.
TEST(SharedGpu, TheRuleStandsWithTheTunerOff) {
  Waits waits;
  waits.pinned_copy = std::chrono::milliseconds(10);
  RankSetup setup = shared_gpu_setup(waits);
  setup.config.tune = false;
  for (const auto& f : run_under_the_rule(setup)) ADD_FAILURE() << f;
}

// One rank cannot make the measurement's buffers (1 MiB, the largest point on 2 ranks): every
// rank learns it before any timed call, none waits for the other, and the rule stands on both.
TEST(SharedGpu, ARankWithoutTheMeasurementsBuffersLeavesTheRuleInPlace) {
  Waits waits;
  waits.pinned_copy = std::chrono::milliseconds(10);
  const RankSetup setup = shared_gpu_setup(waits, /*refusing_rank=*/1, size_t(1) << 20);
  for (const auto& f : run_under_the_rule(setup)) ADD_FAILURE() << f;
}

// The ranks would time different calls (one runs online trials, so it times every algorithm
// they would try): every rank learns it before any timed call, none waits for the other, and the
// rule stands on both. Only IPC direct's calls follow, which start no trials (their shapes'
// trials would meet on one rank only).
TEST(SharedGpu, RanksThatWouldTimeOtherCallsLeaveTheRuleInPlace) {
  Waits waits;
  waits.pinned_copy = std::chrono::milliseconds(10);
  RankSetup setup = shared_gpu_setup(waits);
  setup.adjust = [](int rank, EngineConfig* config) {
    if (rank == 1) config->tune_trials = 3;
  };
  const int n = 2;
  const size_t count = 50000;  // a rank moves 400 KB: IPC direct under the rule
  const auto failures = run_ranks(n, setup, [&](RankContext& c) {
    const std::string wrong = check_allreduce_in_place(c.comm, c.rank, n, count, MemKind::kDevice);
    if (!wrong.empty()) c.failures->push_back(wrong);
    if (!ran_ipc_direct(c.engine))
      c.failures->push_back(std::string("ran ") + c.engine.last_algorithm());
  });
  for (const auto& f : failures) ADD_FAILURE() << f;
}

// A rank's bytes on the host copies' path: allreduce sends and receives the whole vector, the
// others the whole and one block (engine/ring_plan.h, most_bytes_of_a_rank).
size_t moved(CollKind kind, size_t bytes, int n) {
  return kind == CollKind::kAllreduce ? 2 * bytes : bytes + bytes / n;
}

TEST(SharedGpuPaths, PointsFallOnBothOfTheFabricsWays) {
  const size_t max = 65536, mib = size_t(1) << 20;
  EXPECT_EQ(shared_gpu_points(CollKind::kAllreduce, 2, max),
            (std::vector<size_t>{1024, 32768, 65536, mib}));
  EXPECT_EQ(shared_gpu_points(CollKind::kAllgather, 2, max),
            (std::vector<size_t>{1024, 43688, 87376, mib}));
  for (CollKind kind : {CollKind::kAllreduce, CollKind::kAllgather, CollKind::kReduceScatter}) {
    for (int n : {2, 3, 7, 1024}) {
      const std::vector<size_t> points = shared_gpu_points(kind, n, max);
      ASSERT_EQ(points.size(), 4u) << coll_name(kind) << " on " << n;
      const size_t unit = kind == CollKind::kAllreduce ? 4 : 4 * static_cast<size_t>(n);
      for (size_t p : points) EXPECT_EQ(p % unit, 0u) << p << " on " << n;
      // The second point is the largest call on the host copies, the third is past them.
      EXPECT_LE(moved(kind, points[1], n), max);
      EXPECT_GT(moved(kind, points[1] + unit, n), max);
      EXPECT_GT(moved(kind, points[2], n), max);
      EXPECT_LE(points.back(), mib);
    }
  }
  // No call takes the host copies, or every call up to past 1 MiB does: 1 KiB and 1 MiB only
  // (and no overflow of the limit times the ranks).
  EXPECT_EQ(shared_gpu_points(CollKind::kAllreduce, 2, 0), (std::vector<size_t>{1024, mib}));
  EXPECT_EQ(shared_gpu_points(CollKind::kAllgather, 1024, SIZE_MAX),
            (std::vector<size_t>{4096, mib}));
}

TEST(SharedGpuPaths, ExtrasInterpolateBetweenPointsAndHoldOutside) {
  PathExtra e;
  e.add(1024, 100);
  e.add(65536, 300);
  e.add(1 << 20, 200);
  EXPECT_DOUBLE_EQ(e.at(8), 100);
  EXPECT_DOUBLE_EQ(e.at(1024), 100);
  EXPECT_DOUBLE_EQ(e.at(1024 + (65536 - 1024) / 2.0), 200);
  EXPECT_DOUBLE_EQ(e.at(65536), 300);
  EXPECT_DOUBLE_EQ(e.at(1 << 20), 200);
  EXPECT_DOUBLE_EQ(e.at(256 << 20), 200);
  EXPECT_DOUBLE_EQ(PathExtra().at(4096), 0);
}

// Allgather on 2 ranks sharing one H200 without MPS (2026-12-04, the measurement's INFO line):
// IPC direct 570.5, 485.1 and 529.9 us at 1 KiB, 64 KiB and 1 MiB (predicted 25.0, 25.1, 26.6);
// the ring through host copies 203.7 at 1 KiB (predicted 3.2), staged 234.8 and 251.6 at 64 KiB
// and 1 MiB (predicted 9.4 and 53.9).
SharedGpuPaths plain_allgather_h200() {
  SharedGpuPaths p;
  const int k = shared_gpu_shape(CollKind::kAllgather, false);
  p.ipc[k].add(1024, 570.5 - 25.0);
  p.ipc[k].add(65536, 485.1 - 25.1);
  p.ipc[k].add(1 << 20, 529.9 - 26.6);
  p.host_copies[k].add(1024, 203.7 - 3.2);
  p.staged[k].add(65536, 234.8 - 9.4);
  p.staged[k].add(1 << 20, 251.6 - 53.9);
  p.measured = true;
  return p;
}

TEST(SharedGpuPaths, PicksWhatTheH200MeasuredFaster) {
  const SharedGpuPaths p = plain_allgather_h200();
  const int ag = shared_gpu_shape(CollKind::kAllgather, false);
  // 256 KiB, staged: the ring ran 279 us, IPC direct 475-494 (the model: 29.7 and 25.4).
  SharedGpuPick at = pick_shared_gpu_path(p, ag, 262144, false, 25.4, 29.7);
  EXPECT_TRUE(at.fabric_faster);
  EXPECT_GT(at.ipc_us, 400);
  EXPECT_LT(at.fabric_us, 300);
  EXPECT_NEAR(at.fabric_us - at.fabric_extra_us, 29.7, 1e-9);
  // 16 KiB through host copies: the staged series does not apply.
  at = pick_shared_gpu_path(p, ag, 16384, true, 25.0, 8.9);
  EXPECT_TRUE(at.fabric_faster);
  EXPECT_NEAR(at.fabric_extra_us, 203.7 - 3.2, 1e-9);
  // 4 MiB: IPC direct 502-511 us, the ring 534-717 (the model: 31.4 and 736.3).
  EXPECT_FALSE(pick_shared_gpu_path(p, ag, 4 << 20, false, 31.4, 736.3).fabric_faster);
  // Not measured, or given up: IPC direct whatever the model says (the caller's rule applies).
  EXPECT_FALSE(pick_shared_gpu_path(SharedGpuPaths(), ag, 1024, true, 25, 5).fabric_faster);
  SharedGpuPaths given_up = p;
  given_up.given_up = true;
  EXPECT_FALSE(pick_shared_gpu_path(given_up, ag, 262144, false, 25.4, 29.7).fabric_faster);
}

// A host-copies limit past 1 MiB puts every measured size on the host copies: staged calls
// borrow that series rather than go unpriced (the bare model against IPC direct's 500 us).
TEST(SharedGpuPaths, AWayWithoutPointsBorrowsTheOthers) {
  SharedGpuPaths p = plain_allgather_h200();
  const int k = shared_gpu_shape(CollKind::kAllgather, false);
  p.staged[k] = PathExtra();
  const SharedGpuPick at = pick_shared_gpu_path(p, k, 4 << 20, false, 31.4, 20);
  EXPECT_NEAR(at.fabric_extra_us, 203.7 - 3.2, 1e-9);
  EXPECT_TRUE(at.fabric_faster);
}

// In-place reduce-scatter runs IPC's rounds, not IPC direct: it is priced by its own times; the
// other collectives in place run as out of place and share theirs.
TEST(SharedGpuPaths, InPlaceReduceScatterIsMeasuredApart) {
  const int rs = shared_gpu_shape(CollKind::kReduceScatter, false);
  const int rs_in_place = shared_gpu_shape(CollKind::kReduceScatter, true);
  EXPECT_NE(rs, rs_in_place);
  EXPECT_TRUE(kSharedGpuShapes[rs_in_place].inplace);
  EXPECT_EQ(kSharedGpuShapes[rs_in_place].kind, CollKind::kReduceScatter);
  for (CollKind kind : {CollKind::kAllreduce, CollKind::kAllgather, CollKind::kReduceScatter}) {
    const int out = shared_gpu_shape(kind, false);
    EXPECT_EQ(kSharedGpuShapes[out].kind, kind);
    EXPECT_FALSE(kSharedGpuShapes[out].inplace);
  }
  EXPECT_EQ(shared_gpu_shape(CollKind::kAllreduce, true),
            shared_gpu_shape(CollKind::kAllreduce, false));
  EXPECT_EQ(shared_gpu_shape(CollKind::kAllgather, true),
            shared_gpu_shape(CollKind::kAllgather, false));
  // IPC's rounds 2x IPC direct (one H200, 2026-12-04): at 256 KiB the ring goes first in place
  // (340 us against rounds 498), IPC direct out of place (222 against the ring's 247).
  SharedGpuPaths p;
  p.ipc[rs].add(262144, 221.5 - 25.4);
  p.ipc[rs_in_place].add(262144, 498.2 - 25.4);
  p.staged[rs].add(262144, 247.2 - 54.2);
  p.staged[rs_in_place].add(262144, 340.7 - 54.2);
  p.measured = true;
  EXPECT_FALSE(pick_shared_gpu_path(p, rs, 262144, false, 25.4, 54.2).fabric_faster);
  EXPECT_TRUE(pick_shared_gpu_path(p, rs_in_place, 262144, false, 25.4, 54.2).fabric_faster);
}

}  // namespace
}  // namespace testing
}  // namespace efacoll

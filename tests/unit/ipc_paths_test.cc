// The IPC paths are a class of their own: they run on the services IpcPathServices names alone
// (ranks as threads, their barriers an allgather through shared memory, a host "GPU" runtime),
// with no engine, transport or communicator; and they hand back all the memory they hold.
#include "engine/paths/ipc_paths.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/gpu_memory_to_free.h"
#include "engine/ipc_mappings.h"
#include "engine/ring_plan.h"
#include "gpu/ll_protocol.h"
#include "host_gpu_runtime.h"
#include "thread_ranks.h"

namespace efacoll {
namespace testing {
namespace {

constexpr int kRanks = 3;

// Rank r's element i: small integers, so sums are exact in float.
float input(int rank, size_t i) { return static_cast<float>((rank + 1) * 10 + i % 7); }

CollArgs allreduce_args(std::vector<float>& send, std::vector<float>& recv) {
  CollArgs a;
  a.kind = CollKind::kAllreduce;
  a.sendbuf = send.data();
  a.recvbuf = recv.data();
  a.count = recv.size();
  a.dtype = DType::kFloat32;
  a.op = ROp::kSum;
  a.send_mem = a.recv_mem = MemKind::kDevice;
  return a;
}

// Where the result differs from the sum over ranks, the first such element; else empty.
std::string check_sum(const std::vector<float>& recv) {
  for (size_t i = 0; i < recv.size(); ++i) {
    float want = 0;
    for (int r = 0; r < kRanks; ++r) want += input(r, i);
    if (recv[i] != want)
      return "element " + std::to_string(i) + ": " + std::to_string(recv[i]) + ", want " +
             std::to_string(want);
  }
  return "";
}

// All ranks here, outside the services' count.
void meet(ThreadGroup& group, int rank) {
  uint8_t mine = 1, all[kRanks];
  group.allgather(rank, &mine, 1, all);
}

struct Totals {
  std::atomic<int> exchanges{0}, kernels_started{0}, kernels_ended{0};
};

// One rank's part: set up, one call on each path, a mismatched call, the memory handed back.
void run_rank(int rank, const std::shared_ptr<ThreadGroup>& group,
              const std::shared_ptr<HostGpuRuntime::Counts>& counts, const EngineConfig& config,
              Totals* totals) {
  HostGpuRuntime gpu(counts, /*in_process_ipc=*/true);
  IpcMappings mappings([&gpu](const void* h, void** out) { return gpu.ipc_open(h, out); },
                       [&gpu](void* mapped) { gpu.ipc_close(mapped); }, 8);
  IpcPathServices services;
  services.gpu = &gpu;
  services.mappings = &mappings;
  services.config = &config;
  services.process_key = 1000 + rank;
  services.rank = rank;
  services.size = kRanks;
  services.comm_id = 7;
  services.allgather = [group, rank, totals](const void* in, size_t bytes, void* out) {
    ++totals->exchanges;
    return group->allgather(rank, in, bytes, out);
  };
  services.lendable_lock = [] { return nullptr; };
  services.kernel_started = [totals] { ++totals->kernels_started; };
  services.kernel_ended = [totals] { ++totals->kernels_ended; };
  GpuMemoryToFree memory;
  {
    IpcPaths paths(services);
    paths.set_up(0);
    ASSERT_TRUE(paths.usable_on(0));
    EXPECT_FALSE(paths.usable_on(1));
    ASSERT_TRUE(paths.low_latency_set_up());
    EXPECT_FALSE(paths.gpus_shared());

    // Rounds: 5000 floats through 4 KiB halves of the workspace, five rounds or more.
    std::vector<float> send(5000), recv(5000, -1);
    for (size_t i = 0; i < send.size(); ++i) send[i] = input(rank, i);
    CollArgs args = allreduce_args(send, recv);
    RingPlan ring;
    ASSERT_TRUE(plan_ring(args, rank, kRanks, 1 << 20, &ring).is_ok());
    ASSERT_TRUE(paths.advance_sequence().is_ok());
    Status st = paths.run_rounds(args, ring.ring);
    ASSERT_TRUE(st.is_ok()) << st.message();
    EXPECT_EQ(check_sum(recv), "") << "rounds, rank " << rank;

    // Direct: host memory cannot be exported through the CUDA driver, so every rank learns it in
    // the first exchange and all take the rounds instead; the result is the same.
    std::fill(recv.begin(), recv.end(), -1.0f);
    ASSERT_TRUE(paths.advance_sequence().is_ok());
    st = paths.run_direct(args, ring.ring);
    ASSERT_TRUE(st.is_ok()) << st.message();
    EXPECT_EQ(check_sum(recv), "") << "direct, rank " << rank;

    // Low latency: 64 floats, one kernel, no exchange through the services.
    std::vector<float> small_send(64), small_recv(64, -1);
    for (size_t i = 0; i < small_send.size(); ++i) small_send[i] = input(rank, i);
    CollArgs small = allreduce_args(small_send, small_recv);
    LlCall call;
    ASSERT_TRUE(paths.low_latency_plan(small, &call));
    ASSERT_TRUE(paths.advance_sequence().is_ok());
    const int exchanges_before = totals->exchanges.load();
    meet(*group, rank);  // every rank has read the count
    st = paths.run_low_latency(small, call);
    meet(*group, rank);  // every rank's kernel is done
    const int exchanges_after = totals->exchanges.load();
    meet(*group, rank);  // every rank has read the count before any goes on
    ASSERT_TRUE(st.is_ok()) << st.message();
    EXPECT_EQ(check_sum(small_recv), "") << "low latency, rank " << rank;
    EXPECT_EQ(exchanges_after, exchanges_before) << "the kernel needs no exchange";

    // Another count on the last rank: every rank stops at the first exchange with kMismatch.
    std::vector<float> other_send(rank == kRanks - 1 ? 4000 : 5000), other_recv(other_send.size());
    for (size_t i = 0; i < other_send.size(); ++i) other_send[i] = input(rank, i);
    CollArgs other = allreduce_args(other_send, other_recv);
    RingPlan other_ring;
    ASSERT_TRUE(plan_ring(other, rank, kRanks, 1 << 20, &other_ring).is_ok());
    ASSERT_TRUE(paths.advance_sequence().is_ok());
    st = paths.run_rounds(other, other_ring.ring);
    EXPECT_EQ(st.code(), Code::kMismatch) << st.message();
    EXPECT_NE(st.message().find("4000"), std::string::npos) << st.message();

    paths.give_memory(&memory);
    meet(*group, rank);  // no peer reads this rank's workspace now
  }
  memory.free_all(&gpu);
}

TEST(IpcPaths, RunOnTheirServicesAloneAndHandTheirMemoryBack) {
  auto group = std::make_shared<ThreadGroup>(kRanks);
  auto counts = std::make_shared<HostGpuRuntime::Counts>();
  EngineConfig config;
  config.ipc_chunk_bytes = 4096;
  config.ipc_ll_max_bytes = 1024;
  Totals totals;
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r)
    threads.emplace_back([&, r] { run_rank(r, group, counts, config, &totals); });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(totals.kernels_started.load(), kRanks);
  EXPECT_EQ(totals.kernels_ended.load(), kRanks);
  // Every peer's workspace mapped at set-up was closed once, through give_memory.
  EXPECT_EQ(counts->ipc_opens.load(), kRanks * (kRanks - 1));
  EXPECT_EQ(counts->ipc_closes.load(), counts->ipc_opens.load());
  std::lock_guard<std::mutex> lock(counts->memory_mutex);
  EXPECT_TRUE(counts->live.empty()) << counts->live.size() << " allocations left";
}

}  // namespace
}  // namespace testing
}  // namespace efacoll

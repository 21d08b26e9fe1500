// Ranks that share a GPU: the measurement times the fabric as the user's calls will run it, with
// each algorithm the online trials would try, not only the model's pick (Comm::measure_shared_gpu).
// The ranks are threads of one process over the host runtime, which reports one GPU for all.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/log.h"
#include "engine/ring_plan.h"
#include "forwarding_transport.h"
#include "host_gpu_runtime.h"
#include "reference.h"
#include "thread_ranks.h"
#include "tune/algo.h"
#include "tune/trials.h"

namespace efacoll {
namespace testing {
namespace {

// Every send of `lo` to `hi` bytes takes `wait` longer: an allreduce's data messages are slowed
// message by message, while the calls' control messages (under 1 KiB) are not.
class SlowMidSizedSends : public ForwardingTransport {
 public:
  SlowMidSizedSends(std::unique_ptr<Transport> inner, size_t lo, size_t hi,
                    std::chrono::microseconds wait)
      : ForwardingTransport(std::move(inner)), lo_(lo), hi_(hi), wait_(wait) {}
  Status send(PeerAddr peer, const void* buf, size_t bytes, uint64_t tag, const MemRegion* region,
              Completion* c) override {
    if (bytes >= lo_ && bytes <= hi_) std::this_thread::sleep_for(wait_);
    return ForwardingTransport::send(peer, buf, bytes, tag, region, c);
  }

 private:
  size_t lo_, hi_;
  std::chrono::microseconds wait_;
};

// The fabric's algorithms the model predicts within `margin` of the fastest for an allreduce of
// `bytes` on `n` ranks, its pick first.
std::vector<TunedChoice> allreduce_candidates(const EngineConfig& config, int n, size_t bytes,
                                              double margin) {
  std::vector<float> send(bytes / sizeof(float)), recv(send.size());
  CollArgs a;
  a.kind = CollKind::kAllreduce;
  a.sendbuf = send.data();
  a.recvbuf = recv.data();
  a.count = send.size();
  a.dtype = DType::kFloat32;
  RingPlan plan;
  EXPECT_TRUE(plan_ring(a, 0, n, config.chunk_bytes, &plan).is_ok());
  return near_candidates(config.model, algo_inputs(a.kind, plan.ring, 0, config), margin);
}

double predicted(const std::vector<TunedChoice>& candidates, Algo algo) {
  for (const TunedChoice& c : candidates) {
    if (c.algo == algo) return c.predicted_us;
  }
  ADD_FAILURE() << "no prediction for " << algo_name(algo, CollKind::kAllreduce);
  return 1;
}

AlgoCorrection scaled(Algo algo, size_t bytes, double factor) {
  AlgoCorrection c;
  c.kind = CollKind::kAllreduce;
  c.algo = algo;
  c.bytes = static_cast<double>(bytes);
  c.factor = factor;
  c.holds_below = true;
  return c;
}

// 4 ranks, an allreduce of 4 KiB through pinned host copies. The model picks the ring, with
// recursive doubling predicted 10 % slower (the tree far slower), so the trials would run both.
// Each send of 1-4 KiB waits 2.5 ms: the ring's six blocks of 1 KiB take 15 ms a call,
// recursive doubling's two whole vectors 5 ms. IPC direct waits 10 ms for its turn on the GPU.
// Timing only the model's pick (the ring, 15 ms) left such calls on IPC direct (10); timing what
// the trials would keep (recursive doubling, 5) sends them through the fabric, where the trials
// then keep recursive doubling.
TEST(SharedGpuCandidates, TheFabricIsTimedWithTheAlgorithmTheTrialsWouldKeep) {
  const int n = 4;
  const size_t bytes = 4096;
  RankSetup setup;
  setup.config.chunk_bytes = 16384;
  setup.config.timeout = std::chrono::milliseconds(20000);  // a deadlock fails, not hangs
  setup.config.tune_trials = 1;
  // Allreduce is measured at 1 KiB, 4 KiB (the host copies' largest call), 8 KiB and 1 MiB.
  setup.config.gpu_host_path_max = 2 * bytes;
  const std::vector<TunedChoice> raw = allreduce_candidates(setup.config, n, bytes, 1e9);
  const double rd = predicted(raw, Algo::kRecursive);
  setup.config.model.corrections = {
      scaled(Algo::kRing, bytes, rd / predicted(raw, Algo::kRing) / 1.1),
      scaled(Algo::kTree, bytes, 10 * rd / predicted(raw, Algo::kTree))};
  const std::vector<TunedChoice> near = allreduce_candidates(setup.config, n, bytes, kTrialMargin);
  ASSERT_EQ(near.size(), 2u);
  ASSERT_EQ(near[0].algo, Algo::kRing);
  ASSERT_EQ(near[1].algo, Algo::kRecursive);
  auto counts = std::make_shared<HostGpuRuntime::Counts>();
  setup.gpu = [counts](int) {
    auto rt = std::make_unique<HostGpuRuntime>(counts, /*in_process_ipc=*/true);
    rt->one_shared_gpu = true;
    rt->synchronize_wait = std::chrono::milliseconds(10);
    return rt;
  };
  setup.wrap = [](int, std::unique_ptr<Transport> t) -> std::unique_ptr<Transport> {
    return std::make_unique<SlowMidSizedSends>(std::move(t), 1024, 4096,
                                               std::chrono::microseconds(2500));
  };
  const auto failures = run_ranks(n, setup, [&](RankContext& c) {
    // The trials' calls (8 for each candidate), and one after them.
    for (int call = 0; call < 17; ++call) {
      const std::string wrong = check_allreduce(c.comm, c.rank, n, bytes / sizeof(int32_t),
                                                MemKind::kDevice, MemKind::kDevice);
      const std::string ran = c.engine.last_algorithm();
      if (!wrong.empty() || ran == "IPC direct")
        c.failures->push_back("call " + std::to_string(call) + " ran " + ran + ": " + wrong);
    }
    const std::string kept = c.engine.last_algorithm();
    if (kept != "recursive doubling") c.failures->push_back("the trials kept " + kept);
  });
  for (const auto& f : failures) ADD_FAILURE() << f;
}

}  // namespace
}  // namespace testing
}  // namespace efacoll

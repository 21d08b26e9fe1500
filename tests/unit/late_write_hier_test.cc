// A hierarchical call's own memory after one of its phases failed with receives that their
// senders may still write (engine/paths/hierarchical.cc, comm_late_writes.cc): the slice its cross-node phase
// received into is retired, never reused, and freed only once the whole call is over, since its
// later phases, abandoned, still run in it. Four ranks as 2 nodes of 2, node phases over CUDA IPC
// on the host runtime; the provider takes GPU buffers (HmemOnHost), as EFA with GPUDirect does.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "forwarding_transport.h"
#include "host_gpu_runtime.h"
#include "late_writers.h"
#include "reference.h"
#include "thread_ranks.h"
#include "tune/algo.h"

namespace efacoll {
namespace testing {
namespace {

constexpr int kRanks = 4, kEarly = 2;  // ranks 0 and 1 give up first

// The setup every test here shares: tcp, one-sided messages from 1 KiB, small chunks, GPU calls
// on the fabric even when small. Ranks 0 and 1 time out after 1 s, the others after 10 s.
RankSetup hier_setup(const std::shared_ptr<HostGpuRuntime::Counts>& counts) {
  RankSetup setup;
  setup.transport = "tcp";
  setup.node_size = 2;
  setup.fabric.protocol = Protocol::kRdma;
  setup.fabric.rdma_threshold = 1024;
  setup.config.chunk_bytes = 4096;
  setup.config.gpu_host_path_max = 0;
  setup.config.timeout = std::chrono::milliseconds(10000);
  setup.adjust = [](int rank, EngineConfig* config) {
    if (rank < kEarly) config->timeout = std::chrono::milliseconds(1000);
  };
  setup.gpu = [counts](int) { return std::make_unique<HostGpuRuntime>(counts, true); };
  return setup;
}

// Rank `rank`'s input block of the allgathers below, and the check of a result.
Bytes gather_block(int rank, size_t count) {
  return make_input(DType::kInt32, ROp::kSum, rank, count);
}
std::string check_gathered(const Bytes& got, int n, size_t count) {
  Bytes want;
  for (int r = 0; r < n; ++r) {
    const Bytes block = gather_block(r, count);
    want.insert(want.end(), block.begin(), block.end());
  }
  return compare(got, want, DType::kInt32);
}

Status allgather_on_gpu(RankContext& ctx, size_t count, Bytes* out) {
  Bytes in = gather_block(ctx.rank, count);
  out->assign(in.size() * ctx.size, 0);
  CollArgs a;
  a.kind = CollKind::kAllgather;
  a.sendbuf = in.data();
  a.recvbuf = out->data();
  a.count = count;
  a.dtype = DType::kInt32;
  a.send_mem = a.recv_mem = MemKind::kDevice;
  a.device = 0;
  return ctx.comm.run(a);
}

// "" when a GPU allgather of `count` elements on every rank is exact, else what went wrong.
std::string exact_allgather(RankContext& ctx, size_t count) {
  Bytes out;
  const Status st = allgather_on_gpu(ctx, count, &out);
  return st.is_ok() ? check_gathered(out, ctx.size, count) : st.to_string();
}

// Ranks 0 and 1 give up on a call the others begin only after (they fail it, or pass it exact);
// then twelve calls, each exact.
// `failed_out` holds the failed call's results, which outlive the engines.
std::vector<std::string> fail_once_then_check(const RankSetup& setup, size_t count,
                                              std::vector<Bytes>* failed_out,
                                              std::vector<ResourceUsage>* after) {
  std::atomic<int> failed{0};
  return run_ranks(kRanks, setup, [&](RankContext& ctx) {
    const std::string me = "rank " + std::to_string(ctx.rank);
    Arrival past_failed_call(&failed);
    // The first call makes the sub-communicators, with every rank.
    std::string err = exact_allgather(ctx, count);
    if (!err.empty()) return ctx.failures->push_back(me + ", first call: " + err);
    if (ctx.rank >= kEarly) wait_until(failed, kEarly);
    // Ranks 2 and 3 may still find every message they need (eager sends left before the stop).
    const Status st = allgather_on_gpu(ctx, count, &(*failed_out)[ctx.rank]);
    if (ctx.rank < kEarly && st.is_ok()) ctx.failures->push_back(me + ": the failed call passed");
    if (ctx.rank >= kEarly && st.is_ok()) {
      err = check_gathered((*failed_out)[ctx.rank], ctx.size, count);
      if (!err.empty()) ctx.failures->push_back(me + ", the call that passed: " + err);
    }
    past_failed_call.now();
    wait_until(failed, kRanks);
    for (int call = 1; call <= 12; ++call) {
      err = exact_allgather(ctx, count);
      if (!err.empty())
        return ctx.failures->push_back(me + ", call " + std::to_string(call) + ": " + err);
    }
    (*after)[ctx.rank] = ctx.engine.resource_usage();
  });
}

// A hierarchical allgather receives its cross-node phase into the call's slice: a failed call
// retires that slice, while the call's node phase, abandoned, still runs in it. Until 2026-12-03
// slices were never retired, and the next calls reused them.
TEST(LateWriteHier, AllgatherSlicesAreRetiredWhereTheProviderTakesGpuBuffers) {
  if (!provider_available("tcp")) GTEST_SKIP() << "tcp not available here";
  auto counts = std::make_shared<HostGpuRuntime::Counts>();
  RankSetup setup = hier_setup(counts);
  std::atomic<int> targets{0};
  setup.wrap = [&](int, std::unique_ptr<Transport> t) -> std::unique_ptr<Transport> {
    return std::make_unique<LateWriter>(std::make_unique<HmemOnHost>(std::move(t)), &targets,
                                        nullptr, 0);
  };
  std::vector<Bytes> failed_out(kRanks);
  std::vector<ResourceUsage> after(kRanks);
  const auto failures = fail_once_then_check(setup, 4096, &failed_out, &after);
  EXPECT_TRUE(failures.empty()) << ::testing::PrintToString(failures);
  EXPECT_GT(targets.load(), 0) << "no canceled receive said its sender might still write";
  for (int r = 0; r < kRanks; ++r)
    EXPECT_GT(after[r].retired_bytes_total, 0u) << "rank " << r << " retired nothing";
}

// Sends and receives into "GPU" memory the runtime was told to free (Counts::keep_freed): a
// phase still running in memory the engine gave back.
class FreedMemoryWatch : public ForwardingTransport {
 public:
  FreedMemoryWatch(std::unique_ptr<Transport> inner, std::shared_ptr<HostGpuRuntime::Counts> memory,
                   std::atomic<int>* uses)
      : ForwardingTransport(std::move(inner)), memory_(std::move(memory)), uses_(uses) {}
  Status send(PeerAddr peer, const void* buf, size_t bytes, uint64_t tag, const MemRegion* region,
              Completion* c) override {
    if (bytes > 0 && memory_->in_freed_memory(buf, bytes)) ++*uses_;
    return ForwardingTransport::send(peer, buf, bytes, tag, region, c);
  }
  Status recv(PeerAddr peer, void* buf, size_t bytes, uint64_t tag, const MemRegion* region,
              Completion* c) override {
    if (bytes > 0 && memory_->in_freed_memory(buf, bytes)) ++*uses_;
    return ForwardingTransport::recv(peer, buf, bytes, tag, region, c);
  }

 private:
  std::shared_ptr<HostGpuRuntime::Counts> memory_;
  std::atomic<int>* uses_;
};

// A slice retired by a hierarchical call's failed cross-node phase is freed after the call, never
// during it. With a fabric algorithm forced, the node phase that follows runs a fabric schedule,
// whose start frees retired memory once every late write has come, and that phase sends from the
// slice. Here the late writes come at once (one progress each) and the provider holds nothing,
// so only the engine's count of hierarchical calls under way keeps the slice
// (Engine::hierarchical_calls_under_way_). After the call, the start of the next hierarchical
// call frees it; until 2026-12-04 only the start of a fabric schedule did, which inside a
// hierarchical call the count stops, so where every call was hierarchical the retired memory
// stayed to the end.
TEST(LateWriteHier, ARetiredSliceIsFreedAfterItsCallAndNotDuringIt) {
  if (!provider_available("tcp")) GTEST_SKIP() << "tcp not available here";
  auto counts = std::make_shared<HostGpuRuntime::Counts>(/*keep_freed=*/true);
  RankSetup setup = hier_setup(counts);
  setup.fabric.protocol = Protocol::kSendRecv;  // the provider itself awaits no late write
  ASSERT_TRUE(parse_algo_overrides("ring", &setup.config.algo).is_ok());
  std::atomic<int> targets{0}, uses_after_free{0};
  setup.wrap = [&](int, std::unique_ptr<Transport> t) -> std::unique_ptr<Transport> {
    auto writer = std::make_unique<LateWriter>(std::make_unique<HmemOnHost>(std::move(t)), &targets,
                                               nullptr, /*writes_each=*/1);
    writer->mark_every_canceled_receive();
    return std::make_unique<FreedMemoryWatch>(std::move(writer), counts, &uses_after_free);
  };
  std::vector<Bytes> failed_out(kRanks);
  std::vector<ResourceUsage> after(kRanks);
  const auto failures = fail_once_then_check(setup, 4096, &failed_out, &after);
  EXPECT_TRUE(failures.empty()) << ::testing::PrintToString(failures);
  EXPECT_GT(targets.load(), 0) << "no receive was canceled";
  EXPECT_EQ(uses_after_free.load(), 0) << "a phase sent or received in memory already freed";
  for (int r = 0; r < kEarly; ++r) {
    EXPECT_GT(after[r].retired_bytes_total, 0u) << "rank " << r << " retired nothing";
    EXPECT_EQ(after[r].retired_bytes_held, 0u) << "rank " << r << " never freed what it retired";
  }
}

// A call's data sends (the chunks, of `data_bytes`: not the notices, nor the small messages of
// the node phases' barriers), after the first half, complete without leaving: as behind a sender
// that stalled midway, the receiver's later receives wait, their clear-to-sends sent. count()
// measures a call's data sends; arm() lets the next call send half of that many.
class SendsLostMidway : public ForwardingTransport {
 public:
  SendsLostMidway(std::unique_ptr<Transport> inner, size_t data_bytes)
      : ForwardingTransport(std::move(inner)), data_bytes_(data_bytes) {}
  void count() {
    std::lock_guard<std::mutex> lock(mutex_);
    counting_ = true;
    counted_ = 0;
  }
  void arm() {
    std::lock_guard<std::mutex> lock(mutex_);
    counting_ = false;
    armed_ = true;
    pass_ = counted_ / 2;
  }
  void disarm() {
    std::lock_guard<std::mutex> lock(mutex_);
    armed_ = false;
  }
  int counted() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return counted_;
  }
  Status send(PeerAddr peer, const void* buf, size_t bytes, uint64_t tag, const MemRegion* region,
              Completion* c) override {
    if (bytes == data_bytes_) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (counting_) ++counted_;
      if (armed_ && pass_-- <= 0) {
        lost_.push_back({c, bytes, tag});
        return Status::ok();
      }
    }
    return ForwardingTransport::send(peer, buf, bytes, tag, region, c);
  }
  Status progress(int* completed) override {
    Status st = ForwardingTransport::progress(completed);
    std::vector<Lost> lost;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      lost.swap(lost_);
    }
    for (const Lost& l : lost) {
      l.c->tag = l.tag;  // as a provider reports a send's tag, which the engine checks
      l.c->fn(l.c, Status::ok(), l.bytes);
    }
    *completed += static_cast<int>(lost.size());
    return st;
  }

 private:
  struct Lost {
    Completion* c;
    size_t bytes;
    uint64_t tag;
  };
  const size_t data_bytes_;
  mutable std::mutex mutex_;
  bool counting_ = false, armed_ = false;
  int counted_ = 0, pass_ = 0;
  std::vector<Lost> lost_;  // completed at the next progress
};

// A hierarchical allreduce runs its cross-node phase in place on the slice: a ring there receives
// its second half (the allgather of reduced blocks) into the slice itself. Ranks 2 and 3 stall
// midway through that phase, so ranks 0 and 1 give up with those receives posted: the slice is
// retired, and every later call is exact though the late writes go on into it.
TEST(LateWriteHier, AllreduceSliceIsRetiredWhenItsCrossNodePhaseStallsMidway) {
  if (!provider_available("tcp")) GTEST_SKIP() << "tcp not available here";
  constexpr size_t count = 1 << 16;
  auto counts = std::make_shared<HostGpuRuntime::Counts>();
  RankSetup setup = hier_setup(counts);
  ASSERT_TRUE(parse_algo_overrides("allreduce:hier", &setup.config.algo).is_ok());
  // Across nodes, the ring, whatever the size: the rule, not the cost model, and no recursive
  // doubling (whose receives go to the scratch).
  setup.config.tune = false;
  setup.config.rd_max_bytes = 0;
  std::atomic<int> targets{0};
  std::vector<SendsLostMidway*> stalling(kRanks, nullptr);
  setup.wrap = [&](int rank, std::unique_ptr<Transport> t) -> std::unique_ptr<Transport> {
    t = std::make_unique<HmemOnHost>(std::move(t));
    if (rank < kEarly) return std::make_unique<LateWriter>(std::move(t), &targets, nullptr, 0);
    auto lossy = std::make_unique<SendsLostMidway>(std::move(t), setup.config.chunk_bytes);
    stalling[rank] = lossy.get();
    return lossy;
  };
  std::vector<Bytes> failed_in(kRanks);  // the failed call's buffers outlive the engines
  std::atomic<int> counted{0}, failed{0};
  ::testing::internal::CaptureStderr();
  const auto failures = run_ranks(kRanks, setup, [&](RankContext& ctx) {
    const std::string me = "rank " + std::to_string(ctx.rank);
    auto exact = [&](const std::string& which) {
      const std::string err =
          check_allreduce_in_place(ctx.comm, ctx.rank, kRanks, count, MemKind::kDevice);
      if (!err.empty()) ctx.failures->push_back(me + ", " + which + ": " + err);
      return err.empty();
    };
    SendsLostMidway* lossy = stalling[ctx.rank];
    Arrival past_counted_call(&counted), past_failed_call(&failed);
    if (!exact("first call")) return;  // makes the sub-communicators
    if (lossy) lossy->count();
    if (!exact("counted call")) return;
    if (lossy && lossy->counted() < 4)
      return ctx.failures->push_back(me + ": " + std::to_string(lossy->counted()) +
                                     " sends, too few to stall midway");
    past_counted_call.now();
    wait_until(counted, kRanks);
    if (lossy) lossy->arm();
    failed_in[ctx.rank] = make_input(DType::kInt32, ROp::kSum, ctx.rank, count);
    const Status st = run_int32_sum(ctx.comm, count, nullptr, MemKind::kDevice,
                                    failed_in[ctx.rank].data(), MemKind::kDevice);
    if (lossy) lossy->disarm();
    // Ranks 2 and 3 had every message they needed unless a stalled one held back a peer's.
    if (ctx.rank < kEarly && st.is_ok()) ctx.failures->push_back(me + ": the failed call passed");
    past_failed_call.now();
    wait_until(failed, kRanks);
    for (int call = 1; call <= 12; ++call) {
      if (!exact("call " + std::to_string(call))) return;
    }
  });
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(failures.empty()) << ::testing::PrintToString(failures);
  EXPECT_GT(targets.load(), 0) << "no canceled receive said its sender might still write";
  EXPECT_NE(log.find("hierarchical slice"), std::string::npos)
      << "the slice was not retired; the log:\n"
      << log;
}

}  // namespace
}  // namespace testing
}  // namespace efacoll

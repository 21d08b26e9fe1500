// A one-sided write that comes after its receive was canceled. The sender may hold the
// clear-to-send already (a stop, a slow peer) and write whenever it gets to it; EFA keeps no
// order between writes, so such a write can land after the next call's own data. The transport
// marks those receives, and the engine retires the memory they named instead of reusing it.
#include <gtest/gtest.h>
#include <malloc.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <numeric>
#include <thread>
#include <utility>
#include <vector>

#include "fabric_pair.h"
#include "forwarding_transport.h"
#include "host_gpu_runtime.h"
#include "late_writers.h"
#include "reference.h"
#include "thread_ranks.h"
#include "transport/tag.h"

namespace efacoll {
namespace testing {
namespace {

class LateWritePair : public FabricPair {};

// Real providers: the write really lands after the cancellation, completes nothing, and takes no
// later receive's completion id.
TEST_P(LateWritePair, ACanceledReceiveIsMarkedAndItsLateWriteCompletesNothing) {
  std::vector<int> late(2000), next(2000), target(2000, -1), next_target(2000, -1);
  std::iota(late.begin(), late.end(), 100);
  std::iota(next.begin(), next.end(), 50000);
  MemRegion ml, mn, mt, mnt;
  ASSERT_TRUE(a_->register_memory(late.data(), 8000, MemKind::kHost, -1, &ml).is_ok());
  ASSERT_TRUE(a_->register_memory(next.data(), 8000, MemKind::kHost, -1, &mn).is_ok());
  ASSERT_TRUE(b_->register_memory(target.data(), 8000, MemKind::kHost, -1, &mt).is_ok());
  ASSERT_TRUE(b_->register_memory(next_target.data(), 8000, MemKind::kHost, -1, &mnt).is_ok());
  const uint64_t tag = make_tag(1, 0, 2, 3), next_tag = make_tag(1, 1, 2, 3);

  Waiter canceled;
  ASSERT_TRUE(
      post([&] { return b_->recv(a_at_b_, target.data(), 8000, tag, &mt, &canceled); }).is_ok());
  b_->cancel(&canceled);
  ASSERT_TRUE(wait_all({&canceled}));
  EXPECT_FALSE(canceled.status.is_ok());
  EXPECT_TRUE(canceled.may_still_be_written) << "the clear-to-send had left";
  EXPECT_EQ(b_->late_writes_awaited(), 1u);

  // The sender meets the clear-to-send only now, and writes.
  Waiter sent;
  ASSERT_TRUE(post([&] { return a_->send(b_at_a_, late.data(), 8000, tag, &ml, &sent); }).is_ok());
  ASSERT_TRUE(wait_all({&sent}));
  EXPECT_TRUE(sent.status.is_ok()) << sent.status.to_string();
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (target != late && std::chrono::steady_clock::now() < until) {
    int n;
    b_->progress(&n);
    a_->progress(&n);
  }
  EXPECT_EQ(target, late) << "the late write lands in the canceled receive's buffer";
  while (b_->late_writes_awaited() > 0 && std::chrono::steady_clock::now() < until) {
    int n;
    b_->progress(&n);
  }
  EXPECT_EQ(b_->late_writes_awaited(), 0u) << "the late write came";

  // The next receive gets its own write, and only that.
  Waiter got, sent_next;
  ASSERT_TRUE(post([&] {
                return b_->recv(a_at_b_, next_target.data(), 8000, next_tag, &mnt, &got);
              }).is_ok());
  ASSERT_TRUE(post([&] {
                return a_->send(b_at_a_, next.data(), 8000, next_tag, &mn, &sent_next);
              }).is_ok());
  ASSERT_TRUE(wait_all({&got, &sent_next}));
  EXPECT_TRUE(got.status.is_ok()) << got.status.to_string();
  EXPECT_FALSE(got.may_still_be_written);
  EXPECT_EQ(next_target, next);
  for (MemRegion* m : {&ml, &mn}) a_->deregister_memory(m);
  for (MemRegion* m : {&mt, &mnt}) b_->deregister_memory(m);
}

INSTANTIATE_TEST_SUITE_P(Providers, LateWritePair,
                         ::testing::Combine(::testing::Values("tcp", "shm", "udp"),
                                            ::testing::Values(true)),
                         [](const auto& info) { return std::get<0>(info.param) + "_rdma"; });

// A provider that cannot cancel a receive at once (udp;ofi_rxd, one it has begun to match): it
// holds each canceled receive for `hold`, writing into its buffer at every progress meanwhile,
// and only then passes the cancellation on.
class CancelHeldBack : public ReceiveBuffers {
 public:
  CancelHeldBack(std::unique_ptr<Transport> inner, std::chrono::milliseconds hold,
                 std::atomic<int>* held_back)
      : ReceiveBuffers(std::move(inner)), hold_(hold), held_back_(held_back) {}
  bool holds_operations() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return !held_.empty() || ForwardingTransport::holds_operations();
  }
  void cancel(Completion* c) override {
    std::pair<uint8_t*, size_t> target;
    if (!receive_buffer(c, &target)) return ForwardingTransport::cancel(c);
    std::lock_guard<std::mutex> lock(mutex_);
    held_.push_back({c, target, std::chrono::steady_clock::now() + hold_});
    ++*held_back_;
  }
  Status progress(int* completed) override {
    Status st = ForwardingTransport::progress(completed);
    std::vector<Completion*> now_canceled;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const auto now = std::chrono::steady_clock::now();
      for (size_t i = 0; i < held_.size();) {
        if (now < held_[i].until) {
          std::memset(held_[i].target.first, 0x5a, held_[i].target.second);
          ++i;
          continue;
        }
        now_canceled.push_back(held_[i].completion);
        held_.erase(held_.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
    // A receive that took a message meanwhile has ended: its cancellation does nothing.
    for (Completion* c : now_canceled) ForwardingTransport::cancel(c);
    return st;
  }

 private:
  struct Held {
    Completion* completion;
    std::pair<uint8_t*, size_t> target;
    std::chrono::steady_clock::time_point until;
  };
  const std::chrono::milliseconds hold_;
  std::atomic<int>* held_back_;
  mutable std::mutex mutex_;
  std::vector<Held> held_;
};

// How expect_later_calls_exact injects late writes, and what rank 0's engine held after.
struct LateWriteRun {
  Protocol protocol = Protocol::kRdma;
  bool wrap = true;         // false: only the provider's own late writes
  Targets* left = nullptr;  // LateWriter's
  int writes_each = 0;      // LateWriter's
  // Rank 0's transport instead of a LateWriter.
  std::function<std::unique_ptr<Transport>(std::unique_ptr<Transport>)> wrap_with;
  std::chrono::milliseconds then_pause{0};  // after the later calls, before two more
  // The calls' buffers (kDevice: GPU buffers of a runtime whose device is host memory), in place
  // where both are the same, else not (a call that mixes host and GPU buffers).
  MemKind send_memory = MemKind::kHost, recv_memory = MemKind::kHost;
  bool hmem = false;        // every rank's provider an HmemOnHost, and no host path for GPU calls
  bool every_rank = false;  // every rank's transport a LateWriter, not only rank 0's
  ResourceUsage rank0_after;
};

// Rank 0 gives up on a call rank 1 has not begun (its clear-to-sends wait at rank 1, unread);
// rank 1 then makes that call, meets them and writes. Every later call must be exact.
void expect_later_calls_exact(const std::string& provider, const char* algo,
                              LateWriteRun* run = nullptr) {
  LateWriteRun defaults;
  if (run == nullptr) run = &defaults;
  if (!provider_available(provider)) GTEST_SKIP() << provider << " not available here";
  SCOPED_TRACE(provider + ", " + algo);
  const int n = 2;
  const size_t count = 8192;
  RankSetup setup;
  setup.transport = provider;
  setup.fabric.protocol = run->protocol;
  setup.fabric.rdma_threshold = 1024;
  setup.config.chunk_bytes = 4096;
  setup.config.timeout = std::chrono::milliseconds(10000);
  setup.adjust = [](int rank, EngineConfig* config) {
    if (rank == 0) config->timeout = std::chrono::milliseconds(1000);
  };
  std::atomic<int> targets{0};
  setup.wrap = [&](int rank, std::unique_ptr<Transport> t) -> std::unique_ptr<Transport> {
    if (run->hmem) t = std::make_unique<HmemOnHost>(std::move(t));
    if ((rank != 0 && !run->every_rank) || !run->wrap) return t;
    if (run->wrap_with) return run->wrap_with(std::move(t));
    return std::make_unique<LateWriter>(std::move(t), &targets, run->left, run->writes_each);
  };
  if (run->send_memory == MemKind::kDevice || run->recv_memory == MemKind::kDevice) {
    auto counts = std::make_shared<HostGpuRuntime::Counts>();
    setup.gpu = [counts](int) { return std::make_unique<HostGpuRuntime>(counts); };
  }
  if (run->hmem) setup.config.gpu_host_path_max = 0;
  const bool in_place = run->send_memory == run->recv_memory;
  // The failed call's buffers outlive the engines: the late writes go on until they close.
  std::vector<Bytes> first(n), first_send(n);
  std::atomic<int> first_done{0};
  auto failures = run_ranks(n, setup, [&](RankContext& ctx) {
    Arrival past_first_call(&first_done);
    Status forced = ctx.engine.set_algo(algo);
    if (!forced.is_ok()) return ctx.failures->push_back(forced.to_string());
    if (ctx.rank == 1) wait_until(first_done, 1);
    first[ctx.rank] = make_input(DType::kInt32, ROp::kSum, ctx.rank, count);
    if (!in_place) first_send[ctx.rank] = first[ctx.rank];
    const Status st =
        run_int32_sum(ctx.comm, count, in_place ? nullptr : first_send[ctx.rank].data(),
                      run->send_memory, first[ctx.rank].data(), run->recv_memory);
    if (st.is_ok()) ctx.failures->push_back("rank " + std::to_string(ctx.rank) + ": call 0 passed");
    past_first_call.now();
    wait_until(first_done, n);
    for (int call = 1; call <= 12; ++call) {
      if (call == 11) std::this_thread::sleep_for(run->then_pause);
      const std::string err =
          in_place
              ? check_allreduce_in_place(ctx.comm, ctx.rank, n, count, run->recv_memory)
              : check_allreduce(ctx.comm, ctx.rank, n, count, run->send_memory, run->recv_memory);
      if (!err.empty()) {
        ctx.failures->push_back("rank " + std::to_string(ctx.rank) + ", call " +
                                std::to_string(call) + ": " + err);
        return;
      }
    }
    if (ctx.rank == 0) run->rank0_after = ctx.engine.resource_usage();
  });
  EXPECT_TRUE(failures.empty()) << ::testing::PrintToString(failures);
  if (run->wrap && !run->wrap_with) {
    EXPECT_GT(targets.load(), 0) << "no canceled receive said its sender might still write";
  }
  EXPECT_GT(run->rank0_after.retired_bytes_total, 0u) << "nothing was retired";
}

// Writes that never come: the retired memory is held to the end.
TEST(LateWrite, CallsAfterOneWhoseWritesMayComeLateAreExactOverTcp) {
  for (const char* algo : {"ring", "rd"}) {
    LateWriteRun run;
    expect_later_calls_exact("tcp", algo, &run);
    EXPECT_EQ(run.rank0_after.retired_bytes_held, run.rank0_after.retired_bytes_total);
  }
}

TEST(LateWrite, CallsAfterOneWhoseWritesMayComeLateAreExactOverUdp) {
  for (const char* algo : {"ring", "rd"}) {
    LateWriteRun run;
    expect_later_calls_exact("udp", algo, &run);
    EXPECT_EQ(run.rank0_after.retired_bytes_held, run.rank0_after.retired_bytes_total);
  }
}

// A small GPU call runs its schedule on pinned host copies of its buffers (Comm::run_gpu_via_host,
// below gpu_host_path_max): after it fails, the copies are retired like the scratch. Rank 1,
// which met rank 0's notice in its ring's second step, had receives into its copy of the result.
// Until 2026-12-03 the next such calls reused the copies (the late writes showed in their
// results), and the warning said that the user's buffer might still change.
TEST(LateWrite, PinnedCopiesOfASmallGpuCallAreRetiredOverTcp) {
  LateWriteRun run;
  run.send_memory = run.recv_memory = MemKind::kDevice;
  run.every_rank = true;
  expect_later_calls_exact("tcp", "ring", &run);
  EXPECT_EQ(run.rank0_after.retired_bytes_held, run.rank0_after.retired_bytes_total);
}

// Where the provider takes GPU buffers (FI_HMEM: EFA with GPUDirect RDMA), a GPU call's schedule
// runs in them, efacoll's own included: the GPU scratch, and in a call that mixes host and GPU
// buffers, the device copy of the host one. After a failed call these are retired like the host
// scratch: the copies since 952a3e6, which nothing here could test until a provider took the
// runtime's host-memory "GPU" buffers as its own (HmemOnHost, 2026-12-03).
TEST(LateWrite, GpuScratchAndDeviceCopiesAreRetiredWhereTheProviderTakesGpuBuffers) {
  LateWriteRun run;
  run.send_memory = MemKind::kDevice;  // the result goes to a host buffer, through a device copy
  run.hmem = true;
  run.every_rank = true;
  expect_later_calls_exact("tcp", "ring", &run);
  EXPECT_EQ(run.rank0_after.retired_bytes_held, run.rank0_after.retired_bytes_total);
}

// Writes that come (three times each, at three progresses): the memory goes back only after.
TEST(LateWrite, RetiredMemoryIsFreedOnceItsLateWritesHaveCome) {
  for (const char* provider : {"tcp", "udp"}) {
    LateWriteRun run;
    run.writes_each = 3;
    expect_later_calls_exact(provider, "ring", &run);
    EXPECT_EQ(run.rank0_after.retired_bytes_held, 0u) << provider;
  }
}

// The providers' own late writes, counted by the transport, free what they retired.
TEST(LateWrite, TheProvidersOwnLateWritesFreeWhatTheyRetired) {
  for (const char* provider : {"tcp", "shm", "udp"}) {
    LateWriteRun run;
    run.wrap = false;
    expect_later_calls_exact(provider, "ring", &run);
    EXPECT_EQ(run.rank0_after.retired_bytes_held, 0u) << provider;
  }
}

// Receives the provider gives back only later, written meanwhile: their memory is retired, and
// freed once the provider has given them back. (Recursive doubling would let rank 1 pass: a
// receive of rank 0 still posted takes its message.)
TEST(LateWrite, ReceivesTheProviderGivesBackLateAreRetiredUntilThen) {
  std::atomic<int> held_back{0};
  LateWriteRun run;
  run.protocol = Protocol::kSendRecv;
  run.wrap_with = [&held_back](std::unique_ptr<Transport> t) -> std::unique_ptr<Transport> {
    return std::make_unique<CancelHeldBack>(std::move(t), std::chrono::seconds(1), &held_back);
  };
  run.then_pause = std::chrono::milliseconds(1500);
  expect_later_calls_exact("tcp", "ring", &run);
  EXPECT_GT(held_back.load(), 0) << "no receive was held back";
  EXPECT_EQ(run.rank0_after.retired_bytes_held, 0u);
}

// Where the provider keeps operations it could not cancel, its endpoint stays open when the
// engine goes, and what was retired must stay allocated. glibc is told to give back to the
// system, at once, every whole page freed at the top of a heap, so that a freed buffer reads
// back zeros (under AddressSanitizer, which ignores the settings, the read is reported instead).
TEST(LateWrite, RetiredMemoryOutlivesTheEngineWhereTheProviderKeepsOperations) {
  Targets left;
  LateWriteRun run;
  run.left = &left;
  mallopt(M_TRIM_THRESHOLD, 0);
  mallopt(M_TOP_PAD, 0);
  expect_later_calls_exact("tcp", "ring", &run);
  mallopt(M_TRIM_THRESHOLD, 128 * 1024);
  mallopt(M_TOP_PAD, 128 * 1024);
  if (::testing::Test::IsSkipped()) return;
  ASSERT_FALSE(left.empty());
  for (auto& [buf, bytes] : left) {
    for (size_t i = 0; i < bytes; ++i) ASSERT_EQ(buf[i], 0x5a) << "byte " << i << " of " << bytes;
    std::memset(buf, 0x5a, bytes);  // the provider's write, after the engine is gone
  }
}

}  // namespace
}  // namespace testing
}  // namespace efacoll

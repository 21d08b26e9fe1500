// A one-sided write that comes after its receive was canceled. The sender may hold the
// clear-to-send already (a stop, a slow peer) and write whenever it gets to it; EFA keeps no
// order between writes, so such a write can land after the next call's own data. The transport
// marks those receives, and the engine retires the memory they named instead of reusing it.
#include <gtest/gtest.h>
#include <malloc.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <numeric>
#include <thread>
#include <unordered_map>
#include <utility>

#include "fabric_pair.h"
#include "forwarding_transport.h"
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

// Where a canceled receive says it may still be written, writes into its buffer at every later
// progress: a write that lands at any moment, after any other, as EFA allows. Memory efacoll
// retired absorbs them; memory it reused would show them in a result.
using Targets = std::vector<std::pair<uint8_t*, size_t>>;

// With `left`, it also says that the provider still holds operations (as one that could not
// cancel them does), and hands its targets, written once more, to `left` when it is destroyed:
// memory the provider may still write after the engine is gone.
class LateWriter : public ForwardingTransport {
 public:
  LateWriter(std::unique_ptr<Transport> inner, std::atomic<int>* targets, Targets* left)
      : ForwardingTransport(std::move(inner)), targets_(targets), left_(left) {}
  ~LateWriter() override {
    if (!left_) return;
    for (auto& [buf, bytes] : late_) std::memset(buf, 0x5a, bytes);
    *left_ = late_;
  }
  bool holds_operations() const override { return left_ != nullptr; }
  Status recv(PeerAddr peer, void* buf, size_t bytes, uint64_t tag, const MemRegion* region,
              Completion* c) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      posted_[c] = {static_cast<uint8_t*>(buf), bytes};
    }
    return ForwardingTransport::recv(peer, buf, bytes, tag, region, c);
  }
  void cancel(Completion* c) override {
    ForwardingTransport::cancel(c);
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = posted_.find(c);
    if (it == posted_.end() || !c->may_still_be_written) return;
    late_.push_back(it->second);
    ++*targets_;
  }
  Status progress(int* completed) override {
    Status st = ForwardingTransport::progress(completed);
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [buf, bytes] : late_) std::memset(buf, 0x5a, bytes);
    return st;
  }

 private:
  std::atomic<int>* targets_;
  Targets* left_;
  std::mutex mutex_;
  std::unordered_map<Completion*, std::pair<uint8_t*, size_t>> posted_;
  Targets late_;
};

// Rank 0 gives up on a call rank 1 has not begun (its clear-to-sends wait at rank 1, unread);
// rank 1 then makes that call, meets them and writes. Every later call must be exact.
void expect_later_calls_exact(const std::string& provider, const char* algo,
                              Targets* left = nullptr) {
  if (!provider_available(provider)) GTEST_SKIP() << provider << " not available here";
  SCOPED_TRACE(provider + ", " + algo);
  const int n = 2;
  const size_t count = 8192;
  RankSetup setup;
  setup.transport = provider;
  setup.fabric.protocol = Protocol::kRdma;
  setup.fabric.rdma_threshold = 1024;
  setup.config.chunk_bytes = 4096;
  setup.config.timeout = std::chrono::milliseconds(10000);
  setup.adjust = [](int rank, EngineConfig* config) {
    if (rank == 0) config->timeout = std::chrono::milliseconds(1000);
  };
  std::atomic<int> targets{0};
  setup.wrap = [&](int rank, std::unique_ptr<Transport> t) -> std::unique_ptr<Transport> {
    if (rank != 0) return t;
    return std::make_unique<LateWriter>(std::move(t), &targets, left);
  };
  // The failed call's buffers outlive the engines: the late writes go on until they close.
  std::vector<Bytes> first(n);
  std::atomic<int> first_done{0};
  auto failures = run_ranks(n, setup, [&](RankContext& ctx) {
    Status forced = ctx.engine.set_algo(algo);
    if (!forced.is_ok()) return ctx.failures->push_back(forced.to_string());
    if (ctx.rank == 1) {
      while (first_done.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    first[ctx.rank] = make_input(DType::kInt32, ROp::kSum, ctx.rank, count);
    CollArgs a;
    a.recvbuf = first[ctx.rank].data();
    a.count = count;
    a.dtype = DType::kInt32;
    a.inplace = true;
    const Status st = ctx.comm.run(a);
    if (st.is_ok()) ctx.failures->push_back("rank " + std::to_string(ctx.rank) + ": call 0 passed");
    ++first_done;
    while (first_done.load() < n) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    for (int call = 1; call <= 10; ++call) {
      const std::string err = check_allreduce_in_place(ctx.comm, ctx.rank, n, count);
      if (!err.empty()) {
        ctx.failures->push_back("rank " + std::to_string(ctx.rank) + ", call " +
                                std::to_string(call) + ": " + err);
        return;
      }
    }
  });
  EXPECT_TRUE(failures.empty()) << ::testing::PrintToString(failures);
  EXPECT_GT(targets.load(), 0) << "no canceled receive said its sender might still write";
}

TEST(LateWrite, CallsAfterOneWhoseWritesMayComeLateAreExactOverTcp) {
  for (const char* algo : {"ring", "rd"}) expect_later_calls_exact("tcp", algo);
}

TEST(LateWrite, CallsAfterOneWhoseWritesMayComeLateAreExactOverUdp) {
  for (const char* algo : {"ring", "rd"}) expect_later_calls_exact("udp", algo);
}

// Where the provider keeps operations it could not cancel, its endpoint stays open when the
// engine goes, and what was retired must stay allocated. glibc is told to give back to the
// system, at once, every whole page freed at the top of a heap, so that a freed buffer reads
// back zeros (under AddressSanitizer, which ignores the settings, the read is reported instead).
TEST(LateWrite, RetiredMemoryOutlivesTheEngineWhereTheProviderKeepsOperations) {
  Targets left;
  mallopt(M_TRIM_THRESHOLD, 0);
  mallopt(M_TOP_PAD, 0);
  expect_later_calls_exact("tcp", "ring", &left);
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

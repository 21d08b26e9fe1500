// A rank that gives up on a call tells the peers of its schedule, so that ranks that wait on it,
// or on someone behind it, err at once instead of at their own timeouts. Here rank 0 never
// calls; rank 1 alone has a short timeout: every other rank must fail long before its own. (A
// rank whose only peer is the silent one, as the fifth of five in recursive doubling, can learn
// it only from its own timeout.)
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "reference.h"
#include "thread_ranks.h"

namespace efacoll {
namespace testing {
namespace {

constexpr auto kShort = std::chrono::milliseconds(1000), kLong = std::chrono::milliseconds(30000);

void expect_told_within_the_short_timeout(const std::string& transport, const char* algo) {
  const int n = 4;
  RankSetup setup;
  setup.transport = transport;
  setup.config.chunk_bytes = 1024;
  setup.config.timeout = kLong;
  setup.adjust = [](int rank, EngineConfig* config) {
    if (rank == 1) config->timeout = kShort;
  };
  std::atomic<int> finished{0};
  std::vector<std::string> messages(n);
  const auto start = std::chrono::steady_clock::now();
  auto failures = run_ranks(n, setup, [&](RankContext& ctx) {
    if (ctx.rank == 0) {
      // Alive, so that its endpoint stays open, but never calling.
      const auto until = std::chrono::steady_clock::now() + kLong;
      while (finished.load() < n - 1 && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      return;
    }
    Status forced = ctx.engine.set_algo(algo);
    if (!forced.is_ok()) return ctx.failures->push_back(forced.to_string());
    Bytes out = make_input(DType::kInt32, ROp::kSum, ctx.rank, 1000);
    CollArgs a;
    a.recvbuf = out.data();
    a.count = 1000;
    a.dtype = DType::kInt32;
    a.inplace = true;
    const Status st = ctx.comm.run(a);
    messages[ctx.rank] = st.message();
    if (st.code() != Code::kTimeout)
      ctx.failures->push_back("rank " + std::to_string(ctx.rank) + ": " + st.to_string());
    ++finished;
  });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  SCOPED_TRACE(std::string(transport) + ", " + algo);
  EXPECT_TRUE(failures.empty()) << ::testing::PrintToString(failures);
  EXPECT_LT(seconds, 10) << "the peers learnt it from rank 1's timeout, not their own";
  EXPECT_NE(messages[1].find("EFACOLL_TIMEOUT"), std::string::npos) << messages[1];
  for (int r = 2; r < n; ++r) {
    const bool told = messages[r].find("gave up on this call") != std::string::npos;
    EXPECT_TRUE(told) << "rank " << r << ": " << messages[r];
  }
}

TEST(GiveUp, PeersOfARankThatTimesOutErrWithItOverLoopback) {
  for (const char* algo : {"ring", "tree", "rd"})
    expect_told_within_the_short_timeout("loopback", algo);
}

TEST(GiveUp, PeersOfARankThatTimesOutErrWithItOverTcp) {
  if (!provider_available("tcp")) GTEST_SKIP() << "no tcp provider";
  for (const char* algo : {"ring", "tree", "rd"}) expect_told_within_the_short_timeout("tcp", algo);
}

// shm cannot peek: the ranks take the card rank 1 sends when it gives up (core/peer_watch.h).
TEST(GiveUp, PeersOfARankThatTimesOutErrWithItOverShm) {
  if (!provider_available("shm")) GTEST_SKIP() << "no shm provider";
  for (const char* algo : {"ring", "tree", "rd"}) expect_told_within_the_short_timeout("shm", algo);
}

TEST(GiveUp, PeersOfARankThatTimesOutErrWithItOverUdp) {
  if (!provider_available("udp")) GTEST_SKIP() << "no udp provider";
  for (const char* algo : {"ring", "tree", "rd"}) expect_told_within_the_short_timeout("udp", algo);
}

}  // namespace
}  // namespace testing
}  // namespace efacoll

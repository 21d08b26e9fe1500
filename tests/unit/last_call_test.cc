// The engine's last call (efacoll_last_algorithm and the choice behind it) is read by any thread
// while another's call records it (the C API under MPI_THREAD_MULTIPLE). Under ThreadSanitizer
// (scripts/sanitize.sh tsan) an unlocked read is a report; in any build, the caller finds its
// own call's algorithm recorded with that call's choice (ring's name with ring's choice).
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>

#include "thread_ranks.h"

namespace efacoll {
namespace testing {
namespace {

TEST(LastCall, AReaderOnAnotherThreadSeesOneCallsAlgorithmWithItsChoice) {
  RankSetup setup;
  setup.transport = "loopback";
  const auto failures = run_ranks(2, setup, [](RankContext& ctx) {
    std::atomic<bool> done{false};
    std::atomic<int> torn{0}, reads{0};
    std::thread reader([&] {
      while (!done.load()) {
        // Two getters, two snapshots: each whole (the explanation string copied under the lock).
        const TunedChoice c = ctx.engine.last_choice();
        const std::string name = ctx.engine.last_algorithm();
        if (name.empty() || (c.algo != Algo::kRing && c.algo != Algo::kRecursive)) ++torn;
        ++reads;
      }
    });
    for (int i = 0; i < 200; ++i) {
      const char* algo = i % 2 ? "rd" : "ring";
      Status forced = ctx.engine.set_algo(algo);
      if (!forced.is_ok()) ctx.failures->push_back(forced.to_string());
      const std::string wrong = check_allreduce_in_place(ctx.comm, ctx.rank, 2, 64);
      if (!wrong.empty()) ctx.failures->push_back(wrong);
      const TunedChoice c = ctx.engine.last_choice();
      const std::string name = ctx.engine.last_algorithm();
      const bool ring = c.algo == Algo::kRing;
      if (ring != (name == "ring")) ++torn;
    }
    done = true;
    reader.join();
    if (torn) ctx.failures->push_back(std::to_string(torn.load()) + " torn reads");
    if (reads.load() == 0) ctx.failures->push_back("the reader never read");
  });
  EXPECT_TRUE(failures.empty()) << ::testing::PrintToString(failures);
}

}  // namespace
}  // namespace testing
}  // namespace efacoll

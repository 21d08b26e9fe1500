// MPI_THREAD_MULTIPLE inside the engine: on every rank several threads create communicators at
// once and run collectives on them, the ranks taking the threads' calls in different orders. A
// lock held across a whole call deadlocks here; the engine lends it out while a call waits.
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <thread>

#include "thread_ranks.h"

namespace efacoll {
namespace testing {
namespace {

constexpr int kRanks = 3, kThreads = 3, kCalls = 40;

void thread_calls(int rank, int t, Comm& comm, std::vector<std::string>* failures) {
  for (int i = 0; i < kCalls; ++i) {
    // Rank r's thread t runs ahead of thread t+1 on rank r and behind it on rank r+1: the
    // ranks' orders differ, call after call.
    if ((i + rank + t) % kThreads == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const size_t count = 1 + static_cast<size_t>((i * 37 + t * 101) % 3000);
    const std::string wrong = check_allreduce_in_place(comm, rank, kRanks, count);
    if (!wrong.empty()) {
      return failures->push_back("thread " + std::to_string(t) + " call " + std::to_string(i) +
                                 ": " + wrong);
    }
  }
}

TEST(ConcurrentComms, ThreadsOnTheirOwnCommunicatorsInterleave) {
  RankSetup setup;
  setup.config.chunk_bytes = 1024;
  setup.config.concurrent = true;
  setup.config.timeout = std::chrono::milliseconds(20000);  // a deadlock fails, not hangs
  std::vector<std::shared_ptr<ThreadGroup>> groups;
  for (int t = 0; t < kThreads; ++t) groups.push_back(std::make_shared<ThreadGroup>(kRanks));
  std::vector<std::string> failures = run_ranks(kRanks, setup, [&](RankContext& c) {
    std::vector<std::unique_ptr<Comm>> comms(kThreads);
    std::vector<std::vector<std::string>> mine(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        // Created at once by every thread: the ids are agreed while other creations run.
        ThreadBootstrap boot(groups[t], c.rank);
        Status st = c.engine.create_comm(boot, &comms[t]);
        if (!st.is_ok()) return mine[t].push_back("create: " + st.to_string());
        thread_calls(c.rank, t, *comms[t], &mine[t]);
      });
    }
    for (auto& th : threads) th.join();
    std::set<uint32_t> ids = {c.comm.id()};
    for (auto& comm : comms) {
      if (comm && !ids.insert(comm->id()).second)
        c.failures->push_back("two communicators, one id");
    }
    for (auto& m : mine) c.failures->insert(c.failures->end(), m.begin(), m.end());
  });
  for (const auto& f : failures) ADD_FAILURE() << f;
}

}  // namespace
}  // namespace testing
}  // namespace efacoll

// A call into the provider that never returns cannot time out by itself: the engine's watchdog
// reports it once it has held its thread for EFACOLL_TIMEOUT, and without a handler the process
// aborts saying why (src/engine/provider_watchdog.cc).
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <mutex>
#include <regex>
#include <thread>

#include "forwarding_transport.h"
#include "reference.h"
#include "stopped_child.h"
#include "thread_ranks.h"
#include "transport/provider_clock.h"

namespace efacoll {
namespace testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

TEST(ProviderClock, ReportsTheCallThatEnteredFirstUntilItReturns) {
  ProviderClock clock;
  ProviderCall call;
  EXPECT_FALSE(clock.oldest(&call));
  const auto before = steady_clock::now();
  {
    ProviderClock::Scope outer(clock, "fi_cq_read");
    std::this_thread::sleep_for(milliseconds(2));
    {
      ProviderClock::Scope inner(clock, "fi_writedata");
      ASSERT_TRUE(clock.oldest(&call));
      EXPECT_STREQ(call.what, "fi_cq_read");
      EXPECT_GE(call.since, before);
      EXPECT_LE(call.since, steady_clock::now() - milliseconds(2));
    }
    ASSERT_TRUE(clock.oldest(&call));
    EXPECT_STREQ(call.what, "fi_cq_read");
  }
  EXPECT_FALSE(clock.oldest(&call));
}

TEST(ProviderClock, SeesAnotherThreadsCallAndLeavesCallsBeyondItsSlotsUnmarked) {
  ProviderClock clock;
  std::mutex mutex;
  std::condition_variable cv;
  bool entered = false, leave = false;
  std::thread other([&] {
    ProviderClock::Scope held(clock, "fi_tsend");
    std::unique_lock<std::mutex> lock(mutex);
    entered = true;
    cv.notify_all();
    cv.wait(lock, [&] { return leave; });
  });
  {
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait(lock, [&] { return entered; });
  }
  ProviderCall call;
  ASSERT_TRUE(clock.oldest(&call));
  EXPECT_STREQ(call.what, "fi_tsend");
  EXPECT_TRUE(pthread_equal(call.thread, other.native_handle()));
  {
    // More calls at once than slots: the first one stays the oldest, nothing breaks.
    std::vector<std::unique_ptr<ProviderClock::Scope>> many;
    for (int i = 0; i < 40; ++i)
      many.push_back(std::make_unique<ProviderClock::Scope>(clock, "fi_trecv"));
    ASSERT_TRUE(clock.oldest(&call));
    EXPECT_STREQ(call.what, "fi_tsend");
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    leave = true;
  }
  cv.notify_all();
  other.join();
  EXPECT_FALSE(clock.oldest(&call));
}

// Once armed for n calls, the next n progress calls each hold their thread inside "the
// provider" (marked as fi_cq_read on its own clock) until released or `hold` has passed.
class ProviderHoldsTheThread : public ForwardingTransport {
 public:
  ProviderHoldsTheThread(std::unique_ptr<Transport> inner, milliseconds hold)
      : ForwardingTransport(std::move(inner)), hold_(hold) {}
  void arm(int calls = 1) { holds_left_ = calls; }
  void release() {
    std::lock_guard<std::mutex> lock(mutex_);
    released_ = true;
    cv_.notify_all();
  }
  steady_clock::time_point held_since() const { return held_since_.load(); }
  Status progress(int* completed) override {
    if (holds_left_.load() > 0 && holds_left_.fetch_sub(1) > 0) {
      ProviderClock::Scope held(clock_, "fi_cq_read");
      held_since_ = steady_clock::now();
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait_for(lock, hold_, [this] { return released_; });
    }
    return ForwardingTransport::progress(completed);
  }
  bool oldest_provider_call(ProviderCall* out) const override {
    return clock_.oldest(out) || ForwardingTransport::oldest_provider_call(out);
  }

 private:
  milliseconds hold_;
  std::atomic<int> holds_left_{0};
  std::atomic<steady_clock::time_point> held_since_{};
  ProviderClock clock_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool released_ = false;
};

struct Watched {
  std::mutex mutex;
  std::vector<std::string> reports;
  steady_clock::time_point first_report, held_since;
};

// Two ranks over tcp run an exact allreduce; then rank 1's provider holds its thread for `hold`
// in the second one, with a timeout of one second on rank 1.
void run_with_a_held_provider(milliseconds hold, Watched* watched) {
  RankSetup setup;
  setup.transport = "tcp";
  setup.config.timeout = milliseconds(30000);
  setup.config.tune = false;
  ProviderHoldsTheThread* held = nullptr;
  setup.wrap = [&](int rank, std::unique_ptr<Transport> t) -> std::unique_ptr<Transport> {
    if (rank != 1) return t;
    auto wrapped = std::make_unique<ProviderHoldsTheThread>(std::move(t), hold);
    held = wrapped.get();
    return wrapped;
  };
  setup.adjust = [&](int rank, EngineConfig* config) {
    if (rank != 1) return;
    config->timeout = milliseconds(1000);
    config->stuck_provider_min = milliseconds(0);          // the timeout alone
    config->idle_progress = std::chrono::microseconds(0);  // only the call's own progress
    config->on_stuck_provider = [&](const std::string& message) {
      std::lock_guard<std::mutex> lock(watched->mutex);
      if (watched->reports.empty()) {
        watched->first_report = steady_clock::now();
        watched->held_since = held->held_since();
      }
      watched->reports.push_back(message);
      held->release();
    };
  };
  auto failures = run_ranks(2, setup, [&](RankContext& ctx) {
    const std::string first = check_allreduce_in_place(ctx.comm, ctx.rank, 2, 4096);
    if (!first.empty()) ctx.failures->push_back("first call: " + first);
    if (ctx.rank == 1) held->arm();
    // The held call may end in error (its peers waited too) or exact; never wrong.
    const std::string second = check_allreduce_in_place(ctx.comm, ctx.rank, 2, 4096);
    if (!second.empty() && second.find("EFACOLL_TIMEOUT") == std::string::npos &&
        second.find("gave up") == std::string::npos)
      ctx.failures->push_back("second call: " + second);
  });
  EXPECT_TRUE(failures.empty()) << ::testing::PrintToString(failures);
  if (!watched->reports.empty()) {
    const double late =
        std::chrono::duration<double>(watched->first_report - watched->held_since).count();
    EXPECT_GE(late, 0.99) << "reported before the timeout";
    // At the timeout (1 s), not at the hold's end (10 s): room for a loaded 2-core machine.
    EXPECT_LT(late, 6.0) << "reported long after the timeout";
  }
}

TEST(ProviderWatchdog, ACallTheProviderDoesNotReturnFromIsReportedOnceAtTheTimeout) {
  if (!provider_available("tcp")) GTEST_SKIP() << "no tcp provider";
  Watched watched;
  run_with_a_held_provider(milliseconds(10000), &watched);
  ASSERT_EQ(watched.reports.size(), 1u) << ::testing::PrintToString(watched.reports);
  const std::string& m = watched.reports[0];
  EXPECT_TRUE(std::regex_search(
      m, std::regex("^fi_cq_read of provider tcp(;ofi_rxm)? has not returned for [0-9.]+ s "
                    "\\(EFACOLL_TIMEOUT 1 s\\)")))
      << m;
  EXPECT_TRUE(std::regex_search(
      m, std::regex("last collective started here: allreduce on communicator [0-9]+ "
                    "\\(call [0-9]+\\)$")))
      << m;
}

TEST(ProviderWatchdog, AProviderCallShorterThanTheTimeoutIsNotReported) {
  if (!provider_available("tcp")) GTEST_SKIP() << "no tcp provider";
  Watched watched;
  run_with_a_held_provider(milliseconds(400), &watched);
  EXPECT_TRUE(watched.reports.empty()) << ::testing::PrintToString(watched.reports);
}

// The thread a stuck call holds, once a test names it (else none is named).
std::atomic<pthread_t> held_thread{};

// Reports one call that entered the provider at `since` and never left.
class ProviderStuckSince : public ForwardingTransport {
 public:
  ProviderStuckSince(std::unique_ptr<Transport> inner, steady_clock::time_point since)
      : ForwardingTransport(std::move(inner)), since_(since) {}
  bool oldest_provider_call(ProviderCall* out) const override {
    out->what = "fi_cq_read";
    out->since = since_;
    out->thread = held_thread.load();
    return true;
  }

 private:
  steady_clock::time_point since_;
};

// RankSetup::wrap for ranks whose provider call entered at `since` and never left.
decltype(RankSetup::wrap) stuck_since(steady_clock::time_point since) {
  return [since](int, std::unique_ptr<Transport> t) -> std::unique_ptr<Transport> {
    return std::make_unique<ProviderStuckSince>(std::move(t), since);
  };
}

// One rank over loopback whose provider call entered at `since`, with EFACOLL_TIMEOUT `timeout`
// and no handler: the watchdog's default ends the process.
void run_stuck_rank(steady_clock::time_point since, milliseconds timeout) {
  // The default action: libinfinipath's handler (linked into Debian's libfabric) would turn the
  // abort into exit(1) and write a backtrace file into the working directory.
  std::signal(SIGABRT, SIG_DFL);
  RankSetup setup;
  setup.config.timeout = timeout;
  setup.config.stuck_provider_min = milliseconds(0);  // the timeout alone
  setup.wrap = stuck_since(since);
  run_ranks(1, setup, [](RankContext&) { std::this_thread::sleep_for(milliseconds(20000)); });
  std::fprintf(stderr, "the watchdog let the process live\n");
  std::exit(0);
}

TEST(ProviderWatchdogDeathTest, WithoutAHandlerTheProcessAbortsSayingWhy) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(run_stuck_rank(steady_clock::now() - std::chrono::seconds(10), milliseconds(1000)),
               "efacoll ERROR NET fi_cq_read of provider loopback has not returned for 10\\.[0-9] "
               "s \\(EFACOLL_TIMEOUT 1 s\\).*efacoll stops this process");
}

// A call held past a short timeout but for less than ten seconds is taken as slow, not stuck.
TEST(ProviderWatchdog, ACallHeldPastAShortTimeoutButUnderTenSecondsIsNotReported) {
  RankSetup setup;
  setup.config.timeout = milliseconds(1000);
  std::atomic<int> reports{0};
  setup.config.on_stuck_provider = [&](const std::string&) { ++reports; };
  const auto since = steady_clock::now() - std::chrono::seconds(6);
  setup.wrap = stuck_since(since);
  run_ranks(1, setup, [](RankContext&) { std::this_thread::sleep_for(milliseconds(2000)); });
  EXPECT_EQ(reports.load(), 0);
}

void say_which_thread_aborted(int) {
  const char* said = pthread_equal(pthread_self(), held_thread.load())
                         ? "SIGABRT on the held thread\n"
                         : "SIGABRT on another thread\n";
  if (write(2, said, std::strlen(said)) < 0) _exit(4);
  _exit(3);
}

// The abort comes on the thread the provider holds, so that a backtrace shows the provider.
TEST(ProviderWatchdogDeathTest, TheAbortComesOnTheHeldThread) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        RankSetup setup;
        setup.config.timeout = milliseconds(1000);
        setup.config.stuck_provider_min = milliseconds(0);  // the timeout alone
        const auto since = steady_clock::now() - std::chrono::seconds(10);
        setup.wrap = stuck_since(since);
        run_ranks(1, setup, [](RankContext&) {
          struct sigaction sa = {};
          sa.sa_handler = say_which_thread_aborted;
          sigaction(SIGABRT, &sa, nullptr);
          held_thread = pthread_self();
          std::this_thread::sleep_for(milliseconds(20000));
        });
        std::exit(0);
      },
      ::testing::ExitedWithCode(3), "SIGABRT on the held thread");
}

// A process stopped (SIGSTOP: a debugger, a suspended job) while a call is in the provider is
// not aborted for the stop when it resumes: the call gets a whole timeout from then.
TEST(ProviderWatchdog, TheTimeAProcessWasStoppedDoesNotCountAgainstItsCall) {
  const StoppedChildEnd end =
      run_stopped_child([] { run_stuck_rank(steady_clock::now(), milliseconds(2000)); },
                        milliseconds(500), milliseconds(3000), milliseconds(10000));
  ASSERT_TRUE(end.ended) << "still alive 10 s after it resumed";
  EXPECT_TRUE(WIFSIGNALED(end.status) && WTERMSIG(end.status) == SIGABRT)
      << "status " << end.status;
  EXPECT_NE(end.said.find("has not returned for 2."), std::string::npos) << end.said;
  EXPECT_GE(end.seconds_after_resume, 1.8) << "aborted for the time it was stopped";
  // Reported one timeout (2 s) after the resume, not at the 10 s bound: room for a loaded host.
  EXPECT_LT(end.seconds_after_resume, 7.0) << "the stuck call was not reported after the stop";
}

// The same for the timeout of a call waiting on a late peer: stopped 3 s with a 2 s timeout,
// the call still completes, exact, once the peer comes.
TEST(StoppedProcess, ACallWaitingOnAPeerDoesNotTimeOutForTheStop) {
  const StoppedChildEnd end = run_stopped_child(
      [] {
        RankSetup setup;
        setup.config.timeout = milliseconds(2000);
        auto failures = run_ranks(2, setup, [](RankContext& ctx) {
          if (ctx.rank == 1) std::this_thread::sleep_for(milliseconds(1500));
          const std::string wrong = check_allreduce_in_place(ctx.comm, ctx.rank, 2, 4096);
          if (!wrong.empty()) ctx.failures->push_back(wrong);
        });
        for (const std::string& f : failures) std::fprintf(stderr, "%s\n", f.c_str());
        std::fflush(stderr);
        _exit(failures.empty() ? 0 : 1);
      },
      milliseconds(500), milliseconds(3000), milliseconds(10000));
  ASSERT_TRUE(end.ended) << "still alive 10 s after it resumed";
  EXPECT_TRUE(WIFEXITED(end.status) && WEXITSTATUS(end.status) == 0)
      << "status " << end.status << ": " << end.said;
}

// Forgiving stops has a bound: where every progress call takes 1.2 s, a 2 s timeout still
// fires (about every other such pass is forgiven, as a stop would be).
TEST(StoppedProcess, AProviderWhoseCallsKeepTakingSecondsStillTimesOut) {
  RankSetup setup;
  setup.config.timeout = milliseconds(2000);
  setup.config.idle_progress = std::chrono::microseconds(0);
  setup.wrap = [](int rank, std::unique_ptr<Transport> t) -> std::unique_ptr<Transport> {
    if (rank != 1) return t;
    auto held = std::make_unique<ProviderHoldsTheThread>(std::move(t), milliseconds(1200));
    held->arm(12);  // then its calls return at once again: a broken bound cannot hang the test
    return held;
  };
  std::atomic<bool> done{false};
  double seconds = 0;
  auto failures = run_ranks(2, setup, [&](RankContext& ctx) {
    if (ctx.rank == 0) {  // never calls
      while (!done.load()) std::this_thread::sleep_for(milliseconds(10));
      return;
    }
    const auto start = steady_clock::now();
    const std::string result = check_allreduce_in_place(ctx.comm, ctx.rank, 2, 4096);
    seconds = std::chrono::duration<double>(steady_clock::now() - start).count();
    done = true;
    if (result.find("EFACOLL_TIMEOUT") == std::string::npos)
      ctx.failures->push_back("no timeout: " + result);
  });
  EXPECT_TRUE(failures.empty()) << ::testing::PrintToString(failures);
  EXPECT_LT(seconds, 8.0) << "the slow provider's passes were all forgiven";
}

}  // namespace
}  // namespace testing
}  // namespace efacoll

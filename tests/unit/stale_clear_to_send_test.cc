// A clear-to-send that its sender never answers: the sender's call had fewer messages (another
// count), or had failed before the clear-to-send came. Its receiver retired the memory the write
// could reach, and waits for that write; the sender answers the clear-to-send when it drops
// what the failed call left (engine/comm_stale.cc), with a write without data, so that the
// receiver can free that memory.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "count_mismatch_run.h"
#include "fabric_pair.h"
#include "reference.h"
#include "thread_ranks.h"
#include "transport/tag.h"

namespace efacoll {
namespace testing {
namespace {

class StaleClearToSendPair : public FabricPair {
 protected:
  // b_ (rank 1) asks a_ for 8000 bytes; a_ takes the clear-to-send as a plain message, as the
  // drop of a failed call's leftovers does.
  void ask_and_take(Waiter* asked, std::vector<uint8_t>* taken, bool rank_given = true) {
    if (rank_given) asked->receiver_rank = 1;
    ASSERT_TRUE(post([&] {
                  return b_->recv(a_at_b_, target_.data(), 8000, tag_, &target_mr_, asked);
                }).is_ok());
    Waiter took;
    taken->assign(256, 0);
    ASSERT_TRUE(
        post([&] { return a_->recv(b_at_a_, taken->data(), 256, tag_, nullptr, &took); }).is_ok());
    ASSERT_TRUE(wait_all({&took}));
    ASSERT_TRUE(took.status.is_ok()) << took.status.to_string();
    taken->resize(took.bytes);
  }
  void answer(const std::vector<uint8_t>& taken) {
    Waiter answered;
    Status st =
        post([&] { return a_->answer_stale(taken.data(), taken.size(), peers_, &answered); });
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    ASSERT_TRUE(wait_all({&answered}));
    EXPECT_TRUE(answered.status.is_ok()) << answered.status.to_string();
  }
  // Progresses b_ for a while, or until it awaits no late write.
  void settle(std::chrono::milliseconds at_most) {
    const auto until = std::chrono::steady_clock::now() + at_most;
    while (b_->late_writes_awaited() > 0 && std::chrono::steady_clock::now() < until) {
      int n;
      a_->progress(&n);
      b_->progress(&n);
    }
  }
  void SetUp() override {
    FabricPair::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    target_.assign(8000, 0xee);
    ASSERT_TRUE(b_->register_memory(target_.data(), 8000, MemKind::kHost, -1, &target_mr_).is_ok());
    peers_ = {b_at_a_ + 1000, b_at_a_};  // rank 0 is nobody here
  }
  void TearDown() override {
    if (b_) b_->deregister_memory(&target_mr_);
  }

  std::vector<uint8_t> target_;
  MemRegion target_mr_;
  std::vector<PeerAddr> peers_;
  const uint64_t tag_ = make_tag(1, 0, 0, 3);
};

TEST_P(StaleClearToSendPair, TheAnswerEndsTheWaitOfACanceledReceiveAndWritesNothingThere) {
  Waiter asked;
  std::vector<uint8_t> taken;
  ASSERT_NO_FATAL_FAILURE(ask_and_take(&asked, &taken));
  b_->cancel(&asked);
  ASSERT_TRUE(wait_all({&asked}));
  ASSERT_TRUE(asked.may_still_be_written);
  EXPECT_EQ(b_->late_writes_awaited(), 1u);
  ASSERT_NO_FATAL_FAILURE(answer(taken));
  settle(std::chrono::seconds(10));
  EXPECT_EQ(b_->late_writes_awaited(), 0u);
  EXPECT_EQ(target_, std::vector<uint8_t>(8000, 0xee)) << "the answer wrote into the receive";
}

TEST_P(StaleClearToSendPair, AReceiveStillWaitingIsNotEndedByAnAnswer) {
  Waiter asked;
  std::vector<uint8_t> taken;
  ASSERT_NO_FATAL_FAILURE(ask_and_take(&asked, &taken));
  ASSERT_NO_FATAL_FAILURE(answer(taken));
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  while (!asked.done && std::chrono::steady_clock::now() < until) {
    int n;
    a_->progress(&n);
    b_->progress(&n);
  }
  EXPECT_FALSE(asked.done) << "a receive in flight was completed without data";
  b_->cancel(&asked);
  ASSERT_TRUE(wait_all({&asked}));
  EXPECT_EQ(b_->late_writes_awaited(), 1u);
  ASSERT_NO_FATAL_FAILURE(answer(taken));  // its sender drops it later
  settle(std::chrono::seconds(10));
  EXPECT_EQ(b_->late_writes_awaited(), 0u);
}

TEST_P(StaleClearToSendPair, OtherMessagesAreNotAnswered) {
  std::vector<uint8_t> other(48, 0x11);
  Waiter unused;
  EXPECT_EQ(a_->answer_stale(other.data(), other.size(), peers_, &unused).code(),
            Code::kUnsupported);
  // A receive posted without its rank (not by a schedule): its sender cannot tell whom to answer.
  Waiter asked;
  std::vector<uint8_t> taken;
  ASSERT_NO_FATAL_FAILURE(ask_and_take(&asked, &taken, false));
  EXPECT_EQ(a_->answer_stale(taken.data(), taken.size(), peers_, &unused).code(),
            Code::kUnsupported);
  b_->cancel(&asked);
  ASSERT_TRUE(wait_all({&asked}));
}

INSTANTIATE_TEST_SUITE_P(Providers, StaleClearToSendPair,
                         ::testing::Combine(::testing::Values("tcp", "shm", "udp"),
                                            ::testing::Values(true)),
                         [](const auto& info) { return std::get<0>(info.param) + "_rdma"; });

// Rank 1 calls with a quarter of the others' count: clear-to-sends for the data it does not
// have stay unanswered. 40 exact calls later, rank 0 must hold no retired memory.
void expect_retired_memory_freed_after_a_count_mismatch(const std::string& provider) {
  if (!provider_available(provider)) GTEST_SKIP() << provider << " not available here";
  SCOPED_TRACE(provider);
  CountMismatchRun run;
  run.setup.transport = provider;
  auto failures = run_count_mismatch_then_exact_calls(&run);
  EXPECT_TRUE(failures.empty()) << ::testing::PrintToString(failures);
  EXPECT_GT(run.after_mismatch[0].retired_bytes_held, 0u) << "rank 0 retired nothing";
  for (int r = 0; r < CountMismatchRun::kRanks; ++r) {
    EXPECT_EQ(run.at_end[r].retired_bytes_held, 0u)
        << "rank " << r << " still holds retired memory";
  }
}

TEST(StaleClearToSend, AnsweredSoThatARetiredReceiveIsFreedOverTcp) {
  expect_retired_memory_freed_after_a_count_mismatch("tcp");
}

// In the long suite only (tests/CMakeLists.txt: *Long.*): the count mismatch this starts with
// meets udp;ofi_rxd 1.17's rare failure under such traffic (mismatch_test.cc): a fi_cq_read that
// never returns during the failed call, and the watchdog's abort. 2 of 30 runs here, alone on
// the machine, and one CI rehearsal (2026-12-03); the exchange of answers itself is covered on
// udp by StaleClearToSendPair.
TEST(StaleClearToSendLong, AnsweredSoThatARetiredReceiveIsFreedOverUdp) {
  expect_retired_memory_freed_after_a_count_mismatch("udp");
}

}  // namespace
}  // namespace testing
}  // namespace efacoll

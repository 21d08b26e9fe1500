// Ranks that make different calls must all get an error, never a silently mixed result or a
// hang. Where the calls move the same messages (another op or type) every rank learns at once
// what differed, and the communicator then still works. Where they move different messages
// (another collective or count), a waiting rank peeks at what arrived that no receive takes and
// the others learn from its notice: every rank errs saying what differed, long before
// EFACOLL_TIMEOUT.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "core/call_signature.h"
#include "reference.h"
#include "thread_ranks.h"

namespace efacoll {
namespace testing {
namespace {

constexpr auto kTimeout = std::chrono::seconds(20);

struct Call {
  CollKind kind = CollKind::kAllreduce;
  DType dtype = DType::kInt32;
  ROp op = ROp::kSum;
  size_t count = 1000;
};

// Runs `call` on a fresh buffer; allgather and reduce-scatter take `count` per rank.
Status run_call(Comm& comm, int n, const Call& call) {
  const size_t esize = dtype_size(call.dtype);
  const size_t in_count = call.kind == CollKind::kAllreduce   ? call.count
                          : call.kind == CollKind::kAllgather ? call.count
                                                              : call.count * n;
  const size_t out_count = call.kind == CollKind::kAllgather ? call.count * n : in_count;
  std::vector<uint8_t> in(in_count * esize, 1), out(out_count * esize, 0);
  std::vector<size_t> counts(n, call.count);
  CollArgs a;
  a.kind = call.kind;
  a.sendbuf = in.data();
  a.recvbuf = out.data();
  a.count = call.count;
  a.recvcounts = counts.data();
  a.dtype = call.dtype;
  a.op = call.op;
  return comm.run(a);
}

struct Case {
  const char* name;
  Call odd;          // what rank 1 calls; the others call Call{}
  bool same_shape;   // the same messages (the others: some messages are longer than receives)
  const char* said;  // in the message of some rank
};

const Case kCases[] = {
    {"op",
     {CollKind::kAllreduce, DType::kInt32, ROp::kMax, 1000},
     true,
     "allreduce of int32 with max"},
    {"type",
     {CollKind::kAllreduce, DType::kFloat32, ROp::kSum, 1000},
     true,
     "allreduce of float32"},
    // 1000 and 1003 differ in the signature's count bits, 1000 and 4000 do not (found by the
    // ids and lengths of the messages instead).
    {"count", {CollKind::kAllreduce, DType::kInt32, ROp::kSum, 1003}, false, "a different count"},
    {"count, same signature",
     {CollKind::kAllreduce, DType::kInt32, ROp::kSum, 4000},
     false,
     "a different count"},
    {"collective",
     {CollKind::kReduceScatter, DType::kInt32, ROp::kSum, 250},
     false,
     "reduce_scatter of int32 with sum"},
};

// After a failed call the communicator must still work, exactly: "" or what went wrong.
std::string next_call_failure(Comm& comm, int rank, int n) {
  std::vector<int32_t> in(77, rank + 1), out(77, 0);
  CollArgs a;
  a.sendbuf = in.data();
  a.recvbuf = out.data();
  a.count = in.size();
  a.dtype = DType::kInt32;
  const Status again = comm.run(a);
  if (again.is_ok() && out[0] == n * (n + 1) / 2 && out[76] == out[0]) return "";
  return "rank " + std::to_string(rank) + " after: " + again.to_string();
}

RankSetup setup_for(const std::string& transport) {
  RankSetup s;
  s.transport = transport;
  s.config.chunk_bytes = 1024;  // several messages a step
  s.config.timeout = kTimeout;
  if (transport == "shm") {
    // Bounce receives and the one-sided protocol (see the shm test below).
    s.fabric.protocol = Protocol::kRdma;
    s.fabric.rdma_threshold = 4096;
  }
  return s;
}

// A message longer than the receive it meets can cost tcp;ofi_rxm its connection (it cannot skip
// the excess bytes): the rank on the other end then reports that, and later calls between the two
// may fail too. Everywhere else every rank names the mismatch and the communicator goes on.
void expect_every_rank_told(const RankSetup& setup, int n, const Case& c) {
  const bool exact =
      c.same_shape || setup.transport != "tcp" || setup.fabric.protocol == Protocol::kRdma;
  std::vector<std::string> messages(n);
  // The call's own time: setting the ranks up takes seconds under ThreadSanitizer.
  std::vector<double> seconds(n);
  auto failures = run_ranks(n, setup, [&](RankContext& ctx) {
    const auto start = std::chrono::steady_clock::now();
    const Status st = run_call(ctx.comm, n, ctx.rank == 1 ? c.odd : Call{});
    seconds[ctx.rank] =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (st.is_ok() || (exact && st.code() != Code::kMismatch)) {
      ctx.failures->push_back("rank " + std::to_string(ctx.rank) + ": " + st.to_string());
    }
    messages[ctx.rank] = st.message();
    if (!exact) return;
    // The communicator still works, exactly.
    const std::string after = next_call_failure(ctx.comm, ctx.rank, n);
    if (!after.empty()) ctx.failures->push_back(after);
  });
  EXPECT_TRUE(failures.empty()) << c.name << ": " << ::testing::PrintToString(failures);
  EXPECT_LT(*std::max_element(seconds.begin(), seconds.end()), kTimeout.count() / 2)
      << c.name << ": found by the messages, not the timeout; seconds "
      << ::testing::PrintToString(seconds) << ", messages " << ::testing::PrintToString(messages);
  bool named = false;
  for (const std::string& m : messages) named |= m.find(c.said) != std::string::npos;
  EXPECT_TRUE(named) << c.name << ": " << ::testing::PrintToString(messages);
}

void expect_every_rank_told(const std::string& transport, int n, const Case& c) {
  expect_every_rank_told(setup_for(transport), n, c);
}

TEST(Mismatch, EveryRankLearnsWhatDifferedOverLoopback) {
  for (const Case& c : kCases) expect_every_rank_told("loopback", 4, c);
}

TEST(Mismatch, EveryRankLearnsWhatDifferedOverTcp) {
  if (!provider_available("tcp")) GTEST_SKIP() << "no tcp provider";
  for (const Case& c : kCases) expect_every_rank_told("tcp", 3, c);
}

// udp;ofi_rxd, the nearest to EFA's SRD, peeks as tcp does.
TEST(Mismatch, EveryRankLearnsWhatDifferedOverUdp) {
  if (!provider_available("udp")) GTEST_SKIP() << "no udp provider";
  for (const Case& c : kCases) expect_every_rank_told("udp", 3, c);
}

// shm (libfabric 1.17) cannot peek, and stops for good after a message longer than its receive:
// run with the one-sided protocol, which with bounce receives keeps every message within its
// receive (under the default two-sided protocol only mpi.mismatch.shm's same-shape cases run).
// A message of another call is found where it meets a receive. Calls whose messages meet no
// receive (another collective, or another count the signature bits do not show) are found by
// the call cards exchanged after half the timeout (core/peer_watch.h): 4 s here.
TEST(Mismatch, EveryRankLearnsWhatDifferedOverShm) {
  if (!provider_available("shm")) GTEST_SKIP() << "no shm provider";
  RankSetup setup = setup_for("shm");
  setup.config.timeout = std::chrono::seconds(4);
  for (const Case& c : kCases) {
    expect_every_rank_told(setup, 3, c);
  }
}

// Over shm, calls whose messages meet no receive of each other (allgather against allreduce, as
// mpi.mismatch.shm runs them) are found by the call cards: the first a rank takes may be the card
// of a rank that gave up on the mismatch. That card carries its sender's own call, so every rank
// names what differed or, where the sender made this rank's call, which rank found it. Plain
// poisoned cards (before 2026-12-02) said only that their sender "stopped trusting this call".
TEST(Mismatch, AGiveUpCardCarriesItsSendersCallOverShm) {
  if (!provider_available("shm")) GTEST_SKIP() << "no shm provider";
  constexpr int kN = 4;
  const Call odd{CollKind::kAllgather, DType::kByte, ROp::kSum, 4000};
  const Call others{CollKind::kAllreduce, DType::kInt32, ROp::kSum, 4000};
  RankSetup setup;
  setup.transport = "shm";
  setup.config.timeout = std::chrono::seconds(2);
  for (int run = 0; run < 3; ++run) {
    std::vector<std::string> messages(kN);
    auto failures = run_ranks(kN, setup, [&](RankContext& ctx) {
      const Status st = run_call(ctx.comm, kN, ctx.rank == 1 ? odd : others);
      messages[ctx.rank] = st.message();
      if (st.code() != Code::kMismatch)
        ctx.failures->push_back("rank " + std::to_string(ctx.rank) + ": " + st.to_string());
    });
    SCOPED_TRACE("run " + std::to_string(run));
    EXPECT_TRUE(failures.empty()) << ::testing::PrintToString(failures);
    EXPECT_NE(messages[1].find("this rank allgather of byte"), std::string::npos) << messages[1];
    for (int r = 0; r < kN; ++r) {
      const bool named =
          messages[r].find("allgather of byte") != std::string::npos ||
          messages[r].find("found that the ranks' calls differ") != std::string::npos;
      EXPECT_TRUE(named) << "rank " << r << ": " << messages[r];
    }
  }
}

// EFA's protocol: every message a one-sided write, on 4 ranks. Where the counts differ and the
// signatures do not show it, a sender finds the receiver's clear-to-send asking for another length
// and writes what fits, marked as cut (FabricPair.TooLongMessageIsReportedAsTruncation). Marked as
// poison instead, two such ranks could each learn first of the other that it "stopped trusting
// this call", and then no rank said what differed (seen over shm, whose ranks, unable to peek,
// then also wait out the timeout: not run here).
void expect_count_named_over_one_sided_writes(const std::string& transport) {
  const Case& count = kCases[3];
  ASSERT_STREQ(count.name, "count, same signature");
  RankSetup setup = setup_for(transport);
  setup.fabric.protocol = Protocol::kRdma;
  setup.fabric.rdma_threshold = 512;
  for (int run = 0; run < 3; ++run) expect_every_rank_told(setup, 4, count);
}

TEST(Mismatch, ACountOnlyTheLengthsShowIsNamedOverOneSidedWrites) {
  if (!provider_available("tcp")) GTEST_SKIP() << "no tcp provider";
  expect_count_named_over_one_sided_writes("tcp");
}

// The same over udp;ofi_rxd, in the long suite only (tests/CMakeLists.txt: MismatchLong.*): under
// this traffic (clear-to-sends and writes of calls of two counts, 4 ranks as threads) rxd 1.17
// breaks about one run in 50: a completion reported twice (cq_entry_fits now drops it), then a
// fi_cq_read or fi_trecv that never returns (the watchdog's abort), or a rank that never gets a
// write its peer made. The same collectives with matching calls ran 300 of 300 times; tcp's run
// of this test has not failed. Tracked in docs/decisions/0031-provider-faults-left-open.md.
TEST(MismatchLong, ACountOnlyTheLengthsShowIsNamedOverOneSidedWritesOverUdp) {
  if (!provider_available("udp")) GTEST_SKIP() << "no udp provider";
  expect_count_named_over_one_sided_writes("udp");
}

// A rank late to a mismatched call whose messages keep their shape (another op): the ranks that
// found the mismatch run their schedules on until it comes, since every message still does.
// Giving up after two looks stranded it where no notice reaches (shm): it waited out its timeout
// for messages never sent, and the next call failed behind the untaken ones.
void expect_late_peer_waited_for(const std::string& transport) {
  constexpr int kN = 3;
  const Case& op = kCases[0];
  std::vector<std::string> messages(kN);
  const auto start = std::chrono::steady_clock::now();
  RankSetup setup = setup_for(transport);
  setup.fabric.protocol = Protocol::kSendRecv;
  auto failures = run_ranks(kN, setup, [&](RankContext& ctx) {
    if (ctx.rank == 2) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    const Status st = run_call(ctx.comm, kN, ctx.rank == 1 ? op.odd : Call{});
    messages[ctx.rank] = st.message();
    if (st.code() != Code::kMismatch)
      ctx.failures->push_back("rank " + std::to_string(ctx.rank) + ": " + st.to_string());
    const std::string after = next_call_failure(ctx.comm, ctx.rank, kN);
    if (!after.empty()) ctx.failures->push_back(after);
  });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(failures.empty()) << ::testing::PrintToString(failures);
  EXPECT_LT(seconds, kTimeout.count() / 2) << ::testing::PrintToString(messages);
}

TEST(Mismatch, ASameShapeMismatchWaitsForALatePeerOverShm) {
  if (!provider_available("shm")) GTEST_SKIP() << "no shm provider";
  expect_late_peer_waited_for("shm");
}

TEST(Mismatch, ASameShapeMismatchWaitsForALatePeerOverTcp) {
  if (!provider_available("tcp")) GTEST_SKIP() << "no tcp provider";
  expect_late_peer_waited_for("tcp");
}

// A rank whose earlier phase of a composite call failed takes part in the next phase abandoned
// (CollArgs::abandoned): the others, whose calls match each other, stop at once saying a peer
// stopped trusting the call, not at the timeout, and the communicator then works, exactly.
void expect_abandoned_call_stops_the_others(const std::string& transport) {
  constexpr int kN = 3;
  std::vector<std::string> messages(kN);
  const auto start = std::chrono::steady_clock::now();
  auto failures = run_ranks(kN, setup_for(transport), [&](RankContext& ctx) {
    std::vector<int32_t> in(1000, 1), out(1000, 0);
    CollArgs a;
    a.sendbuf = in.data();
    a.recvbuf = out.data();
    a.count = in.size();
    a.dtype = DType::kInt32;
    a.abandoned = ctx.rank == 1;
    const Status st = ctx.comm.run(a);
    if (st.code() != Code::kMismatch)
      ctx.failures->push_back("rank " + std::to_string(ctx.rank) + ": " + st.to_string());
    messages[ctx.rank] = st.message();
    const std::string after = next_call_failure(ctx.comm, ctx.rank, kN);
    if (!after.empty()) ctx.failures->push_back(after);
  });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(failures.empty()) << ::testing::PrintToString(failures);
  EXPECT_LT(seconds, kTimeout.count() / 2) << "stopped by the poison, not the timeout";
  for (int r : {0, 2}) {
    // From rank 1's poison, or from the notice of a rank that heard from it first.
    const bool told = messages[r].find("stopped trusting this call") != std::string::npos ||
                      messages[r].find("found that the ranks' calls differ") != std::string::npos;
    EXPECT_TRUE(told) << "rank " << r << ": " << messages[r];
  }
  EXPECT_NE(messages[1].find("an earlier phase of this call failed on this rank"),
            std::string::npos)
      << messages[1];
}

TEST(Mismatch, AnAbandonedCallStopsTheOthersAtOnceOverLoopback) {
  expect_abandoned_call_stops_the_others("loopback");
}

TEST(Mismatch, AnAbandonedCallStopsTheOthersAtOnceOverTcp) {
  if (!provider_available("tcp")) GTEST_SKIP() << "no tcp provider";
  expect_abandoned_call_stops_the_others("tcp");
}

// Rank 1's reduce-scatter messages that no receive of the others' allreduce took stay queued
// under the failed call's sequence; 64 calls later a reduce-scatter of the same shape reuses it.
// Every one of the 70 reduce-scatters after the failure (new data each time) must be exact.
void expect_no_stale_message_taken(const RankSetup& setup) {
  constexpr int kN = 3, kCalls = 70;
  const Case& other = kCases[4];  // rank 1: reduce-scatter; the others: allreduce
  auto failures = run_ranks(kN, setup, [&](RankContext& ctx) {
    const Status failed = run_call(ctx.comm, kN, ctx.rank == 1 ? other.odd : Call{});
    if (failed.is_ok()) ctx.failures->push_back("rank " + std::to_string(ctx.rank) + ": no error");
    const size_t block = other.odd.count;
    std::vector<int32_t> in(block * kN), out(block);
    std::vector<size_t> counts(kN, block);
    for (int call = 0; call < kCalls; ++call) {
      // Element e of rank r: r * 1000 + call * 7 + e; the sum over ranks is known in closed form.
      for (size_t e = 0; e < in.size(); ++e)
        in[e] = static_cast<int32_t>(ctx.rank * 1000 + call * 7 + e);
      CollArgs a;
      a.kind = CollKind::kReduceScatter;
      a.sendbuf = in.data();
      a.recvbuf = out.data();
      a.count = block;
      a.recvcounts = counts.data();
      a.dtype = DType::kInt32;
      const Status st = ctx.comm.run(a);
      for (size_t e = 0; st.is_ok() && e < block; ++e) {
        const size_t at = ctx.rank * block + e;
        const int32_t want =
            static_cast<int32_t>(1000 * (kN * (kN - 1) / 2) + kN * (call * 7 + at));
        if (out[e] != want) {
          ctx.failures->push_back("rank " + std::to_string(ctx.rank) + ", call " +
                                  std::to_string(call) + ", element " + std::to_string(e) + ": " +
                                  std::to_string(out[e]) + " instead of " + std::to_string(want));
          break;
        }
      }
      if (!st.is_ok()) {
        ctx.failures->push_back("rank " + std::to_string(ctx.rank) + ", call " +
                                std::to_string(call) + ": " + st.to_string());
      }
    }
  });
  EXPECT_TRUE(failures.empty()) << ::testing::PrintToString(failures);
}

TEST(Mismatch, MessagesLeftByAFailedCallNeverReachALaterOneOverLoopback) {
  expect_no_stale_message_taken(setup_for("loopback"));
}

TEST(Mismatch, MessagesLeftByAFailedCallNeverReachALaterOneOverTcp) {
  if (!provider_available("tcp")) GTEST_SKIP() << "no tcp provider";
  expect_no_stale_message_taken(setup_for("tcp"));
}

TEST(Mismatch, MessagesLeftByAFailedCallNeverReachALaterOneOverUdp) {
  if (!provider_available("udp")) GTEST_SKIP() << "no udp provider";
  expect_no_stale_message_taken(setup_for("udp"));
}

// shm cannot peek, so what the failed call left stays queued: the tags' sequence bits beyond the
// usual 6 keep it from the later calls (transport/fabric/fabric_tags.cc; the call 64 on took old
// data before). The failed call (another collective) ends at the timeout there: 3 s.
TEST(Mismatch, MessagesLeftByAFailedCallNeverReachALaterOneOverShm) {
  if (!provider_available("shm")) GTEST_SKIP() << "no shm provider";
  RankSetup setup = setup_for("shm");
  setup.config.timeout = std::chrono::seconds(3);
  expect_no_stale_message_taken(setup);
}

TEST(Mismatch, SignatureNamesTheDifference) {
  const uint32_t sum = call_signature(CollKind::kAllreduce, DType::kFloat32, ROp::kSum, 10);
  EXPECT_EQ(describe_mismatch(sum, sum, 2), "");
  EXPECT_NE(call_signature(CollKind::kAllreduce, DType::kFloat32, ROp::kSum, 11), sum);
  EXPECT_EQ(describe_mismatch(
                sum, call_signature(CollKind::kAllreduce, DType::kFloat32, ROp::kMax, 10), 2),
            "rank 2 called allreduce of float32 with max, this rank allreduce of float32 with sum");
  EXPECT_EQ(call_signature(CollKind::kAllgather, DType::kInt8, ROp::kSum, 5),
            call_signature(CollKind::kAllgather, DType::kInt8, ROp::kMax, 5))
      << "allgather has no op";
  EXPECT_NE(describe_mismatch(sum, kPoisonSignature, 3).find("rank 3"), std::string::npos);
  EXPECT_NE(describe_mismatch(sum, kSameShapePoisonSignature, 3).find("stopped trusting"),
            std::string::npos);
  EXPECT_NE(describe_mismatch(sum, kShortWriteSignature, 3).find("a different count"),
            std::string::npos)
      << "a write cut to the receiver's length says what differed";
}

TEST(Mismatch, SameShapeMeansTheSameMessages) {
  auto sig = [](CollKind kind, DType dtype, ROp op, size_t count) {
    return call_signature(kind, dtype, op, count);
  };
  const uint32_t sum = sig(CollKind::kAllreduce, DType::kInt32, ROp::kSum, 1000);
  EXPECT_TRUE(same_shape(sum, sig(CollKind::kAllreduce, DType::kInt32, ROp::kMax, 1000)));
  EXPECT_TRUE(same_shape(sum, sig(CollKind::kAllreduce, DType::kFloat32, ROp::kSum, 1000)));
  EXPECT_FALSE(same_shape(sum, sig(CollKind::kAllreduce, DType::kFloat64, ROp::kSum, 1000)))
      << "another element size: other lengths";
  EXPECT_FALSE(same_shape(sum, sig(CollKind::kAllgather, DType::kInt32, ROp::kSum, 1000)));
  // Counts whose two signature bits differ.
  size_t other = 1001;
  while ((sig(CollKind::kAllreduce, DType::kInt32, ROp::kSum, other) & 3) == (sum & 3)) ++other;
  EXPECT_FALSE(same_shape(sum, sig(CollKind::kAllreduce, DType::kInt32, ROp::kSum, other)));
  for (uint32_t mark : {kPoisonSignature, kSameShapePoisonSignature, kShortWriteSignature})
    EXPECT_FALSE(same_shape(sum, mark)) << std::hex << mark;
}

}  // namespace
}  // namespace testing
}  // namespace efacoll

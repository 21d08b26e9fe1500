// Each peer gets its messages, and this rank posts its receives from each peer, in schedule order
// even when a full queue turns one away for a moment. shm (libfabric 1.17) answers a sender's
// messages strictly in the order they were sent: a later step's message that jumped ahead, and
// was unexpected at the receiver, held back every completion behind it, and 4 ranks on a ring
// of two channels stalled for good (mpi.shm.np4.two_channels_many_chunks, under load).
#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "core/executor.h"
#include "transport/tag.h"

namespace efacoll {
namespace {

struct Posted {
  bool recv;
  PeerAddr peer;
  uint32_t msg;
  bool operator==(const Posted& o) const {
    return recv == o.recv && peer == o.peer && msg == o.msg;
  }
};

std::ostream& operator<<(std::ostream& os, const Posted& p) {
  return os << (p.recv ? "recv" : "send") << " peer " << p.peer << " msg " << p.msg;
}

// Turns away the first attempt at one operation, as a queue that is full for a moment does;
// accepts everything else, records what it accepted, and completes it at the next progress.
class MomentarilyFullTransport : public Transport {
 public:
  // forever: every operation of that kind with that peer, as tcp;ofi_rxm does once the peer is
  // dead and its queue full.
  explicit MomentarilyFullTransport(Posted turn_away, bool forever = false)
      : turn_away_(turn_away), forever_(forever) {}
  const TransportInfo& info() const override { return info_; }
  std::vector<uint8_t> local_address() const override { return {}; }
  Status insert_peers(const std::vector<std::vector<uint8_t>>&, std::vector<PeerAddr>*) override {
    return Status::ok();
  }
  Status register_memory(void*, size_t, MemKind, int, MemRegion*) override { return Status::ok(); }
  void deregister_memory(MemRegion*) override {}
  Status send(PeerAddr peer, const void*, size_t bytes, uint64_t tag, const MemRegion*,
              Completion* c) override {
    return post({false, peer, tag_msg_id(tag)}, bytes, tag, c);
  }
  Status recv(PeerAddr peer, void*, size_t bytes, uint64_t tag, const MemRegion*,
              Completion* c) override {
    return post({true, peer, tag_msg_id(tag)}, bytes, tag, c);
  }
  Status progress(int* completed) override {
    *completed = 0;
    std::deque<Pending> done;
    done.swap(pending_);
    for (const Pending& p : done) {
      p.c->tag = p.tag;
      p.c->fn(p.c, Status::ok(), p.bytes);
      ++*completed;
    }
    return Status::ok();
  }
  void cancel(Completion*) override {}
  const std::vector<Posted>& accepted() const { return accepted_; }
  void require_posting_order() { info_.quirks.needs_posting_order = true; }

 private:
  struct Pending {
    Completion* c;
    uint64_t tag;
    size_t bytes;
  };
  Status post(const Posted& what, size_t bytes, uint64_t tag, Completion* c) {
    if (forever_ && what.recv == turn_away_.recv && what.peer == turn_away_.peer)
      return Status(Code::kAgain, "queue full for good");
    if (!turned_away_ && what == turn_away_) {
      turned_away_ = true;
      return Status(Code::kAgain, "queue full for a moment");
    }
    accepted_.push_back(what);
    pending_.push_back({c, tag, bytes});
    return Status::ok();
  }
  TransportInfo info_;
  Posted turn_away_;
  bool forever_ = false;
  bool turned_away_ = false;
  std::vector<Posted> accepted_;
  std::deque<Pending> pending_;
};

// Eight bytes with `peer`, received at msg * 8.
Op message(OpKind kind, int peer, uint32_t msg) {
  Op op{kind};
  op.peer = peer;
  op.msg_id = msg;
  op.bytes = 8;
  op.src = {BufId::kSend, 0};
  op.dst = {BufId::kRecv, msg * 8};
  return op;
}

// Four messages with peer 1, then two with peer 2, all of one kind and free to start at once.
Schedule messages_with_two_peers(OpKind kind) {
  Schedule s;
  for (const auto& [peer, msg] :
       std::vector<std::pair<int, uint32_t>>{{1, 0}, {1, 1}, {1, 2}, {1, 3}, {2, 0}, {2, 1}}) {
    s.add(message(kind, peer, msg));
  }
  return s;
}

Status run_schedule(Transport* transport, const Schedule& schedule,
                    std::chrono::milliseconds timeout) {
  HostLocalOps local;
  const std::vector<PeerAddr> peers = {0, 1, 2};
  ExecContext ctx;
  ctx.transport = transport;
  ctx.local = &local;
  ctx.peers = &peers;
  ctx.what = "test schedule";
  ctx.timeout = timeout;
  std::vector<uint8_t> send(64), received(64);
  ExecBuffers bufs;
  bufs.send = send.data();
  bufs.recv = received.data();
  return execute_schedule(schedule, ctx, bufs);
}

std::vector<Posted> run_with_one_turned_away(OpKind kind) {
  MomentarilyFullTransport transport({kind == OpKind::kRecv, 1, 0});
  const Status st =
      run_schedule(&transport, messages_with_two_peers(kind), std::chrono::milliseconds(5000));
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return transport.accepted();
}

TEST(PostingOrder, ASendTurnedAwayKeepsLaterSendsToThatPeerBehindIt) {
  const std::vector<Posted> expected = {{false, 2, 0}, {false, 2, 1},  // the other peer goes on
                                        {false, 1, 0}, {false, 1, 1},
                                        {false, 1, 2}, {false, 1, 3}};  // in order, after the retry
  EXPECT_EQ(run_with_one_turned_away(OpKind::kSend), expected);
}

TEST(PostingOrder, AReceiveTurnedAwayKeepsLaterReceivesFromThatPeerBehindIt) {
  const std::vector<Posted> expected = {{true, 2, 0}, {true, 2, 1}, {true, 1, 0},
                                        {true, 1, 1}, {true, 1, 2}, {true, 1, 3}};
  EXPECT_EQ(run_with_one_turned_away(OpKind::kRecv), expected);
}

// Nothing posted, yet a peer never answered: its operations were turned away until the timeout
// (a one-sided receive's clear-to-send to a killed peer over tcp;ofi_rxm). The error named no
// rank ("ranks that did not answer: none pending", fault.dead_peer.tcp.np5.rank4.rdma).
TEST(PostingOrder, APeerWhoseOperationsAreAlwaysTurnedAwayIsNamedAtTheTimeout) {
  for (const OpKind kind : {OpKind::kRecv, OpKind::kSend}) {
    MomentarilyFullTransport transport({kind == OpKind::kRecv, 1, 0}, /*forever=*/true);
    const Status st =
        run_schedule(&transport, messages_with_two_peers(kind), std::chrono::milliseconds(300));
    EXPECT_EQ(st.code(), Code::kTimeout) << st.to_string();
    EXPECT_NE(st.message().find("ranks that did not answer: 1 (the provider would not take our "
                                "operations for them)"),
              std::string::npos)
        << st.message();
    EXPECT_NE(st.message().find("at step 0"), std::string::npos) << st.message();
  }
}

// Where the transport's provider needs_posting_order (ProviderQuirks), an operation ready early
// waits for the one listed before it with the same peer and direction (udp;ofi_rxd loses a peer's
// messages that come in another order than their receives were posted); elsewhere it goes at once.
// turn_away: one operation a full queue turns away once (by default none).
std::vector<Posted> run_with_early_and_late_operations(bool posting_order,
                                                       Posted turn_away = {false, 9, 99}) {
  Schedule s;
  auto add = [&](OpKind kind, int peer, uint32_t msg) { return s.add(message(kind, peer, msg)); };
  const uint32_t first = add(OpKind::kRecv, 2, 0);
  s.depend(first, add(OpKind::kSend, 1, 1));  // late: after the receive from peer 2
  add(OpKind::kSend, 1, 2);                   // free at once
  s.depend(first, add(OpKind::kRecv, 1, 3));
  add(OpKind::kRecv, 1, 4);
  MomentarilyFullTransport transport(turn_away);
  if (posting_order) transport.require_posting_order();
  const Status st = run_schedule(&transport, s, std::chrono::milliseconds(5000));
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return transport.accepted();
}

TEST(PostingOrder, WhereTheTransportNeedsItEachPeersOperationsArePostedInScheduleOrder) {
  const std::vector<Posted> in_order = {
      {true, 2, 0}, {false, 1, 1}, {false, 1, 2}, {true, 1, 3}, {true, 1, 4}};
  EXPECT_EQ(run_with_early_and_late_operations(true), in_order);
  const std::vector<Posted> as_ready = {
      {true, 2, 0}, {false, 1, 2}, {true, 1, 4}, {false, 1, 1}, {true, 1, 3}};
  EXPECT_EQ(run_with_early_and_late_operations(false), as_ready);
  // The late send turned away once: the send held behind it waits for its retry.
  const std::vector<Posted> after_retry = {
      {true, 2, 0}, {true, 1, 3}, {true, 1, 4}, {false, 1, 1}, {false, 1, 2}};
  EXPECT_EQ(run_with_early_and_late_operations(true, {false, 1, 1}), after_retry);
}

// Holding an operation behind the ones listed before it needs every dependency to point to a
// later operation; a schedule that breaks that is refused at once instead of stalling.
TEST(PostingOrder, WhereTheTransportNeedsItADependencyOnALaterOperationIsRefused) {
  Schedule s;
  const uint32_t early = s.add(message(OpKind::kSend, 1, 0));
  s.depend(s.add(message(OpKind::kSend, 1, 1)), early);
  MomentarilyFullTransport transport({false, 9, 99});
  transport.require_posting_order();
  const Status st = run_schedule(&transport, s, std::chrono::milliseconds(5000));
  EXPECT_EQ(st.code(), Code::kInternal) << st.to_string();
  EXPECT_NE(st.message().find("op 0 depends on op 1, listed after it"), std::string::npos)
      << st.message();
  for (const Posted& p : transport.accepted())  // only the notices telling the peer to stop
    EXPECT_GT(p.msg, 1u) << p;
}

}  // namespace
}  // namespace efacoll

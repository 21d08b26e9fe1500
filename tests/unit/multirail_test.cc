// Several NICs as rails of one transport, on tcp's domains (a network interface and lo stand in
// for a GPU's EFAs): messages stripe over the rails by tag and arrive exact, registrations exist
// on every rail (one-sided protocol), peers with fewer rails meet on the common ones, and a
// cancel reaches the rail that posted the operation.
#include <gtest/gtest.h>

#include <chrono>
#include <numeric>

#include "transport/fabric/fabric_info.h"
#include "transport/fabric/fabric_transport.h"
#include "transport/multirail/multirail_transport.h"
#include "transport/tag.h"
#include "waiter.h"

namespace efacoll {
namespace {

using testing::Waiter;

class MultiRail : public ::testing::Test {
 protected:
  void SetUp() override {
    domains_ = offered_domains("tcp");
    if (domains_.size() < 2) GTEST_SKIP() << "tcp offers fewer than two domains here";
  }

  std::unique_ptr<MultiRailTransport> open(size_t rails, Protocol protocol) {
    FabricOptions options;
    options.protocol = protocol;
    options.rdma_threshold = 1024;
    std::vector<std::unique_ptr<Transport>> list;
    for (size_t r = 0; r < rails; ++r) {
      FiInfoPtr info;
      EXPECT_TRUE(find_provider("tcp", &info, false, domains_[r]).is_ok()) << domains_[r];
      list.emplace_back();
      Status st = open_fabric_transport(info.get(), options, &list.back());
      EXPECT_TRUE(st.is_ok()) << st.to_string();
      EXPECT_EQ(list.back()->info().domain, domains_[r]);
    }
    return std::make_unique<MultiRailTransport>(std::move(list));
  }

  void connect(MultiRailTransport* a, MultiRailTransport* b) {
    std::vector<PeerAddr> peers;
    ASSERT_TRUE(a->insert_peers({b->local_address()}, &peers).is_ok());
    b_at_a_ = peers[0];
    ASSERT_TRUE(b->insert_peers({a->local_address()}, &peers).is_ok());
    a_at_b_ = peers[0];
    ASSERT_TRUE(a->insert_peers({b->local_address()}, &peers).is_ok());
    EXPECT_EQ(peers[0], b_at_a_) << "an address inserted twice is the same peer";
  }

  bool wait(std::vector<Transport*> ends, const std::vector<Waiter>& ws) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < until) {
      int n;
      for (Transport* t : ends) t->progress(&n);
      bool all = true;
      for (const Waiter& w : ws) all = all && w.done;
      if (all) return true;
    }
    return false;
  }

  // Posts, progressing both ends while the provider's queue is full (kAgain is a retry).
  template <typename Post>
  Status post(MultiRailTransport* a, MultiRailTransport* b, Post&& p) {
    for (int i = 0; i < 100000; ++i) {
      Status st = p();
      if (st.code() != Code::kAgain) return st;
      int n;
      a->progress(&n);
      b->progress(&n);
    }
    return Status(Code::kTimeout, "still kAgain");
  }

  // k messages of `ints` ints from a to b, each its own tag; checks every byte.
  void exchange(MultiRailTransport* a, MultiRailTransport* b, int k, size_t ints) {
    std::vector<std::vector<int>> out(k), in(k);
    std::vector<MemRegion> out_mr(k), in_mr(k);
    std::vector<Waiter> sends(k), recvs(k);
    for (int m = 0; m < k; ++m) {
      out[m].resize(ints);
      std::iota(out[m].begin(), out[m].end(), 1000 * m);
      in[m].assign(ints, -1);
      ASSERT_TRUE(
          a->register_memory(out[m].data(), ints * 4, MemKind::kHost, -1, &out_mr[m]).is_ok());
      ASSERT_TRUE(
          b->register_memory(in[m].data(), ints * 4, MemKind::kHost, -1, &in_mr[m]).is_ok());
      Status st = post(a, b, [&] {
        return b->recv(a_at_b_, in[m].data(), ints * 4, make_tag(1, 2, 0, m), &in_mr[m], &recvs[m]);
      });
      ASSERT_TRUE(st.is_ok()) << st.to_string();
    }
    for (int m = 0; m < k; ++m) {
      Status st = post(a, b, [&] {
        return a->send(b_at_a_, out[m].data(), ints * 4, make_tag(1, 2, 0, m), &out_mr[m],
                       &sends[m]);
      });
      ASSERT_TRUE(st.is_ok()) << st.to_string();
    }
    ASSERT_TRUE(wait({a, b}, sends));
    ASSERT_TRUE(wait({a, b}, recvs));
    for (int m = 0; m < k; ++m) {
      EXPECT_TRUE(recvs[m].status.is_ok()) << recvs[m].status.to_string();
      EXPECT_EQ(in[m], out[m]) << "message " << m;
      a->deregister_memory(&out_mr[m]);
      b->deregister_memory(&in_mr[m]);
    }
  }

  std::vector<std::string> domains_;
  PeerAddr b_at_a_ = 0, a_at_b_ = 0;
};

TEST_F(MultiRail, MessagesStripeOverBothRails) {
  auto a = open(2, Protocol::kSendRecv), b = open(2, Protocol::kSendRecv);
  connect(a.get(), b.get());
  exchange(a.get(), b.get(), 32, 2500);
  EXPECT_EQ(a->posted_per_rail(), (std::vector<uint64_t>{16, 16}));
  EXPECT_EQ(b->posted_per_rail(), (std::vector<uint64_t>{16, 16}));
  EXPECT_EQ(a->info().domain, domains_[0] + "+" + domains_[1]);
}

TEST_F(MultiRail, OneSidedWritesUseEachRailsRegistration) {
  auto a = open(2, Protocol::kRdma), b = open(2, Protocol::kRdma);
  ASSERT_TRUE(a->info().rdma);
  connect(a.get(), b.get());
  exchange(a.get(), b.get(), 8, 5000);  // 20 KB each: above the 1 KiB threshold
  EXPECT_EQ(a->posted_per_rail(), (std::vector<uint64_t>{4, 4}));
}

TEST_F(MultiRail, PeersWithFewerRailsMeetOnTheCommonOnes) {
  auto a = open(2, Protocol::kSendRecv), b = open(1, Protocol::kSendRecv);
  connect(a.get(), b.get());
  exchange(a.get(), b.get(), 6, 100);
  EXPECT_EQ(a->posted_per_rail(), (std::vector<uint64_t>{6, 0}));
}

TEST_F(MultiRail, CancelReachesTheRailThatPostedIt) {
  auto a = open(2, Protocol::kSendRecv), b = open(2, Protocol::kSendRecv);
  connect(a.get(), b.get());
  int never = 0;
  std::vector<Waiter> w(2);
  for (int m = 0; m < 2; ++m) {
    ASSERT_TRUE(b->recv(a_at_b_, &never, 4, make_tag(3, 0, 0, m), nullptr, &w[m]).is_ok());
  }
  EXPECT_EQ(b->posted_per_rail(), (std::vector<uint64_t>{1, 1}));
  for (Waiter& x : w) b->cancel(&x);
  ASSERT_TRUE(wait({a.get(), b.get()}, w));
  for (const Waiter& x : w) EXPECT_FALSE(x.status.is_ok()) << "a canceled receive reports it";
}

}  // namespace
}  // namespace efacoll

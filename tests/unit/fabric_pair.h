// Two endpoints of one provider in one process: the fixture of the transport's point-to-point
// tests.
#pragma once
#include <gtest/gtest.h>

#include <chrono>
#include <initializer_list>
#include <memory>
#include <string>
#include <tuple>

#include "in_process_peers.h"
#include "thread_ranks.h"
#include "transport/fabric/fabric_info.h"
#include "transport/fabric/fabric_transport.h"
#include "waiter.h"

namespace efacoll {
namespace testing {

// (provider, one-sided protocol for messages of 1 KiB and more)
class FabricPair : public ::testing::TestWithParam<std::tuple<std::string, bool>> {
 protected:
  const std::string& provider() const { return std::get<0>(GetParam()); }
  bool rdma() const { return std::get<1>(GetParam()); }

  void SetUp() override {
    if (!provider_available(provider())) {
      GTEST_SKIP() << "libfabric provider " << provider() << " not available here";
    }
    FabricOptions options;
    options.protocol = rdma() ? Protocol::kRdma : Protocol::kSendRecv;
    options.rdma_threshold = 1024;
    for (auto* t : {&a_, &b_}) {
      FiInfoPtr info;
      ASSERT_TRUE(find_provider(provider(), &info).is_ok());
      Status st = open_fabric_transport(info.get(), options, t);
      ASSERT_TRUE(st.is_ok()) << st.to_string();
    }
    ASSERT_EQ(a_->info().rdma, rdma());
    if (needs_in_process_introduction(provider())) {
      Status st = introduce_in_process({a_.get(), b_.get()});
      ASSERT_TRUE(st.is_ok()) << st.to_string();
    }
    std::vector<PeerAddr> peers;
    ASSERT_TRUE(a_->insert_peers({b_->local_address()}, &peers).is_ok());
    b_at_a_ = peers[0];
    ASSERT_TRUE(b_->insert_peers({a_->local_address()}, &peers).is_ok());
    a_at_b_ = peers[0];
  }

  // -FI_EAGAIN (kAgain) is a retry, never an error: progress and post again.
  template <typename Post>
  Status post(Post&& p) {
    for (int i = 0; i < 100000; ++i) {
      Status st = p();
      if (st.code() != Code::kAgain) return st;
      int n;
      a_->progress(&n);
      b_->progress(&n);
    }
    return Status(Code::kTimeout, "still kAgain");
  }

  // Progresses both endpoints until every waiter is done (or 20 s pass).
  bool wait_all(std::initializer_list<Waiter*> waiters) {
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < until) {
      int n;
      a_->progress(&n);
      b_->progress(&n);
      bool all = true;
      for (Waiter* w : waiters) all = all && w->done;
      if (all) return true;
    }
    return false;
  }

  std::unique_ptr<Transport> a_, b_;
  PeerAddr b_at_a_ = 0, a_at_b_ = 0;
};

}  // namespace testing
}  // namespace efacoll

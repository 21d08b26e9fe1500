// Provider faults are declared once (transport/provider_quirks.h) and the fabric transport
// reports them in TransportInfo, each provider as opened here, with the workaround that follows.
#include "transport/provider_quirks.h"

#include <gtest/gtest.h>

#include "fabric_pair.h"

namespace efacoll {
namespace testing {
namespace {

TEST(ProviderQuirks, EachProvidersFaultsByName) {
  EXPECT_FALSE(quirks_of("tcp").any());
  EXPECT_FALSE(quirks_of("tcp;ofi_rxm").any());
  EXPECT_FALSE(quirks_of("efa").any());
  const ProviderQuirks shm = quirks_of("shm");
  EXPECT_TRUE(shm.peek_never_completes);
  EXPECT_TRUE(shm.truncation_stops);
  EXPECT_TRUE(shm.matches_whole_tag);
  EXPECT_FALSE(shm.hides_truncation);
  EXPECT_FALSE(shm.needs_posting_order);
  const ProviderQuirks udp = quirks_of("udp;ofi_rxd");
  EXPECT_TRUE(udp.hides_truncation);
  EXPECT_TRUE(udp.needs_posting_order);
  EXPECT_FALSE(udp.truncation_stops);
  EXPECT_EQ(udp.text(), "truncations unreported, loses messages received out of posting order");
  EXPECT_EQ(quirks_of("tcp").text(), "");
}

TEST(ProviderQuirks, RailsTakeTheUnionOfTheirs) {
  ProviderQuirks q = quirks_of("tcp");
  q |= quirks_of("udp;ofi_rxd");
  EXPECT_TRUE(q == quirks_of("udp;ofi_rxd"));
}

// The transport as opened: its quirks are its provider's, and the workarounds hold.
TEST_P(FabricPair, ReportsItsProvidersQuirksAndWorksAroundThem) {
  const TransportInfo& info = a_->info();
  EXPECT_TRUE(info.quirks == quirks_of(info.provider))
      << info.provider << ": " << info.quirks.text();
  Waiter w;
  const Status peek = post([&] { return a_->peek(b_at_a_, 1, 0, &w); });
  if (info.quirks.peek_never_completes) {
    EXPECT_EQ(peek.code(), Code::kUnsupported) << "a peek that would never complete was posted";
  } else if (peek.is_ok()) {
    EXPECT_TRUE(wait_all({&w}));  // nothing there: kAgain, but it completes
  }
  if (info.quirks.truncation_stops && !info.rdma) {
    EXPECT_LE(info.max_msg_size, size_t(512) << 10) << "longer messages than the bounce buffers";
  }
}

}  // namespace
}  // namespace testing
}  // namespace efacoll

// How channels divide a call: ring orders per channel, which calls split, message ids that keep
// a channel on its rail, and the limit on message ids.
#include "coll/channels.h"

#include <gtest/gtest.h>

#include <set>

#include "coll/builders.h"

namespace efacoll {
namespace {

TEST(ChannelRingOrder, EachChannelEntersEveryNodeAtADifferentRank) {
  EXPECT_EQ(channel_ring_order(8, 4, 1), (std::vector<int>{1, 2, 3, 0, 5, 6, 7, 4}));
  EXPECT_EQ(channel_ring_order(8, 4, 4), channel_ring_order(8, 4, 0));
  EXPECT_EQ(channel_ring_order(4, 4, 1), (std::vector<int>{0, 1, 2, 3})) << "one node: as is";
  EXPECT_EQ(channel_ring_order(6, 4, 1), (std::vector<int>{0, 1, 2, 3, 4, 5})) << "uneven nodes";
  // The rank that sends across to the next node differs in every channel of a node's size.
  const int n = 16, l = 8;
  std::set<int> crossing;
  for (int c = 0; c < l; ++c) {
    const std::vector<int> order = channel_ring_order(n, l, c);
    EXPECT_EQ(std::set<int>(order.begin(), order.end()).size(), size_t(n)) << "a permutation";
    crossing.insert(order[l - 1]);
  }
  EXPECT_EQ(crossing.size(), size_t(l));
}

TEST(ChannelsApply, WhereBlocksCanBeSplit) {
  EXPECT_TRUE(channels_apply(CollKind::kAllreduce, false, true));
  EXPECT_TRUE(channels_apply(CollKind::kAllgather, true, true));
  EXPECT_FALSE(channels_apply(CollKind::kAllgather, false, false)) << "rd spans blocks";
  EXPECT_TRUE(channels_apply(CollKind::kReduceScatter, true, false));
  EXPECT_FALSE(channels_apply(CollKind::kReduceScatter, true, true)) << "in place";
}

RingArgs ring_args(int rank, int n, size_t count_per_rank, size_t chunk) {
  RingArgs a;
  a.rank = rank;
  a.nranks = n;
  a.elem_size = 4;
  a.block_counts.assign(n, count_per_rank);
  a.chunk_bytes = chunk;
  return a;
}

TEST(Channels, ChannelCKeepsToRailCWithAsManyRails) {
  // Two channels of a 4-rank allreduce: channel 0 owns the vector's first half.
  ChannelArgs ca;
  ca.channels = 2;
  const RingArgs a = ring_args(1, 4, 256, 64);
  Schedule s;
  ASSERT_TRUE(build_channels(ca, a, build_ring_allreduce, &s).is_ok());
  const size_t half = 4 * 256 * 4 / 2;
  int sends = 0;
  for (const Op& op : s.ops) {
    if (op.kind != OpKind::kSend) continue;
    ++sends;
    const size_t at = op.src.buf == BufId::kScratch ? SIZE_MAX : op.src.offset;
    if (at != SIZE_MAX) {
      EXPECT_EQ(op.msg_id % 2, at < half ? 0u : 1u) << s.describe();
    }
  }
  EXPECT_GT(sends, 8);
}

TEST(Channels, ReportWhenInterleavedIdsDoNotFit) {
  // One channel's share alone fits its message ids; four interleaved do not.
  const size_t share = (size_t(1) << 18) + 1;  // one-element chunks: that many ids
  Schedule s;
  ASSERT_TRUE(build_ring_allgather(ring_args(0, 2, share, 4), &s).is_ok());
  ChannelArgs ca;
  ca.kind = CollKind::kAllgather;
  ca.channels = 4;
  EXPECT_EQ(build_channels(ca, ring_args(0, 2, 4 * share, 4), build_ring_allgather, &s).code(),
            Code::kInvalid);
}

TEST(Channels, FewerElementsThanChannelsSkipEmptyChannels) {
  ChannelArgs ca;
  ca.channels = 8;
  Schedule one, many;
  const RingArgs a = ring_args(0, 2, 1, 64);  // 2 elements
  ASSERT_TRUE(build_channels(ca, a, build_ring_allreduce, &many).is_ok());
  ca.channels = 2;
  ASSERT_TRUE(build_channels(ca, a, build_ring_allreduce, &one).is_ok());
  EXPECT_EQ(many.ops.size(), one.ops.size());
}

}  // namespace
}  // namespace efacoll

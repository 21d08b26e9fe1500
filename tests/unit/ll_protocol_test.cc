// The low-latency protocol's plan and region layout (the kernel itself runs on the GPU machine).
#include "gpu/ll_protocol.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

namespace efacoll {
namespace {

constexpr size_t kSlot = 256 << 10;

// Segments tile every destination's bytes in 16-byte multiples, within one grid.
void expect_tiles(const LlCall& c) {
  size_t largest = 0;
  for (int q = 0; q < c.nranks; ++q) largest = std::max(largest, c.bytes_to[q]);
  if (largest == 0) {
    EXPECT_EQ(c.segments, 0u);
    return;
  }
  EXPECT_EQ(c.segment_bytes % 16, 0u);
  EXPECT_LE(c.segments, kLlMaxSegments);
  EXPECT_GE(c.segments * c.segment_bytes, largest);
  EXPECT_LT((c.segments - 1) * c.segment_bytes, largest) << "an empty segment";
}

TEST(LlPlan, AllreduceSendsTheWholeVectorToEveryone) {
  for (size_t count : {size_t(1), size_t(7), size_t(1001), size_t(60001)}) {
    LlCall c;
    ASSERT_TRUE(ll_plan(CollKind::kAllreduce, 4, count, nullptr, 1, 3, false, kSlot, &c));
    for (int q = 0; q < 3; ++q) {
      EXPECT_EQ(c.bytes_to[q], count * 4);
      EXPECT_EQ(c.offset_to[q], 0u);
    }
    EXPECT_FALSE(c.split);
    expect_tiles(c);
  }
}

TEST(LlPlan, ReduceScatterSendsEachRankItsBlock) {
  const std::vector<size_t> counts = {5, 0, 1000, 3};
  LlCall c;
  ASSERT_TRUE(ll_plan(CollKind::kReduceScatter, 8, 0, counts.data(), 2, 4, false, kSlot, &c));
  size_t offset = 0;
  for (int q = 0; q < 4; ++q) {
    EXPECT_EQ(c.bytes_to[q], counts[q] * 8);
    EXPECT_EQ(c.offset_to[q], offset);
    offset += counts[q] * 8;
  }
  expect_tiles(c);
  LlCall in_place;
  ASSERT_TRUE(ll_plan(CollKind::kReduceScatter, 8, 0, counts.data(), 2, 4, true, kSlot, &in_place));
  EXPECT_TRUE(in_place.split) << "in place, the result overwrites input not yet pushed";
  EXPECT_FALSE(ll_plan(CollKind::kReduceScatter, 8, 0, nullptr, 0, 4, false, kSlot, &c));
}

TEST(LlPlan, AllgatherBlockPerRank) {
  LlCall c;
  ASSERT_TRUE(ll_plan(CollKind::kAllgather, 2, 999, nullptr, 0, 2, true, kSlot, &c));
  EXPECT_EQ(c.bytes_to[0], 1998u);
  EXPECT_EQ(c.bytes_to[1], 1998u);
  EXPECT_FALSE(c.split);
  expect_tiles(c);
}

TEST(LlPlan, RefusesWhatDoesNotFit) {
  LlCall c;
  EXPECT_TRUE(ll_plan(CollKind::kAllreduce, 4, kSlot / 4, nullptr, 0, 2, false, kSlot, &c));
  EXPECT_FALSE(ll_plan(CollKind::kAllreduce, 4, kSlot / 4 + 1, nullptr, 0, 2, false, kSlot, &c));
  EXPECT_FALSE(ll_plan(CollKind::kAllreduce, 4, 1, nullptr, 0, kLlMaxRanks + 1, false, kSlot, &c));
  EXPECT_FALSE(ll_plan(CollKind::kAllreduce, 32, 1, nullptr, 0, 2, false, kSlot, &c));
}

TEST(LlPlan, SlotSharesThePushLimitAmongPeers) {
  EXPECT_EQ(ll_slot_bytes(2 << 20, 2), size_t(2) << 20);
  EXPECT_EQ(ll_slot_bytes(2 << 20, 8), (size_t(2) << 20) / 7 / 16 * 16);
  EXPECT_EQ(ll_slot_bytes(2 << 20, 1), 0u) << "nobody to push to";
  EXPECT_EQ(ll_slot_bytes(0, 4), 0u) << "off";
  EXPECT_EQ(ll_slot_bytes(1 << 20, kLlMaxRanks + 1), 0u);
}

TEST(LlPlan, SmallCallsUsePackedWordsThatFitTheSlotsSecondHalf) {
  LlCall c;
  ASSERT_TRUE(
      ll_plan(CollKind::kAllreduce, 4, kLlPackedMaxBytes / 4, nullptr, 0, 2, false, kSlot, &c));
  EXPECT_TRUE(c.packed);
  ASSERT_TRUE(
      ll_plan(CollKind::kAllreduce, 4, kLlPackedMaxBytes / 4 + 1, nullptr, 0, 2, false, kSlot, &c));
  EXPECT_FALSE(c.packed);
  // Words are twice the data, rounded up to whole words, in the second half of a slot.
  ASSERT_TRUE(ll_plan(CollKind::kAllreduce, 1, 1001, nullptr, 0, 2, false, 4016, &c));
  EXPECT_TRUE(c.packed);
  ASSERT_TRUE(ll_plan(CollKind::kAllreduce, 1, 1005, nullptr, 0, 2, false, 4016, &c));
  EXPECT_FALSE(c.packed);
}

TEST(LlPlan, CountZeroMovesNothing) {
  LlCall c;
  ASSERT_TRUE(ll_plan(CollKind::kAllreduce, 4, 0, nullptr, 0, 4, false, kSlot, &c));
  EXPECT_EQ(c.segments, 0u);
}

TEST(LlRegion, SlotsFlagsAndKeysNeverOverlap) {
  LlRegion r;
  r.slot_bytes = 4096;
  r.nranks = 3;
  std::vector<int> owner(r.total_bytes(), -1);
  int id = 0;
  for (int parity = 0; parity < 2; ++parity) {
    for (int sender = 0; sender < r.nranks; ++sender, ++id) {
      for (size_t b = 0; b < r.slot_bytes; ++b) {
        const size_t at = r.data_offset(parity, sender) + b;
        ASSERT_LT(at, r.flags_offset());
        ASSERT_EQ(owner[at], -1);
        owner[at] = id;
      }
      for (unsigned s = 0; s < kLlMaxSegments; ++s) {
        const size_t at = r.flags_offset() + r.flag_index(parity, sender, s) * sizeof(uint64_t);
        ASSERT_EQ(at % sizeof(uint64_t), 0u);
        for (size_t b = 0; b < sizeof(uint64_t); ++b) {
          ASSERT_LT(at + b, owner.size());
          ASSERT_EQ(owner[at + b], -1);
          owner[at + b] = id;
        }
      }
      const size_t key = r.keys_offset() + r.key_index(parity, sender) * sizeof(uint64_t);
      ASSERT_EQ(key % sizeof(uint64_t), 0u);
      for (size_t b = 0; b < sizeof(uint64_t); ++b) {
        ASSERT_LT(key + b, owner.size());
        ASSERT_EQ(owner[key + b], -1);
        owner[key + b] = id;
      }
    }
  }
  EXPECT_EQ(std::count(owner.begin(), owner.end(), -1), 0) << "the region has unused bytes";
}

TEST(LlKey, CarriesTheSignatureThePathAndTheCountsLowBits) {
  const uint32_t key = ll_call_key(0xabc, (uint64_t{7} << kLlKeyCountBits) | 12345);
  EXPECT_EQ(ll_key_signature(key), 0xabcu);
  EXPECT_EQ(ll_key_count_bits(key), 12345u);
  EXPECT_EQ(ll_key_path(key), LlPath::kLowLatency);
  for (LlPath path : {LlPath::kIpcDirect, LlPath::kIpcRounds, LlPath::kOther}) {
    const uint32_t other = ll_call_key(0xabc, 12345, path);
    EXPECT_EQ(ll_key_path(other), path);
    EXPECT_EQ(ll_key_signature(other), 0xabcu);
    EXPECT_EQ(ll_key_count_bits(other), 12345u);
    // The same call on another path is another key: the kernel stops on it.
    EXPECT_NE(other, key);
  }
  EXPECT_NE(ll_call_key(0xabc, 12345), ll_call_key(0xabc, 12346));
  // The word holds the sequence's low half, so an earlier call's key never reads as this one's.
  EXPECT_NE(ll_key_word(5, key), ll_key_word(7, key));
  EXPECT_EQ(ll_key_word(uint64_t{1} << 32 | 5, key) >> 32, 5u);
}

TEST(LlFaultWord, RoundTripsKindPeerAndKey) {
  EXPECT_EQ(ll_fault(0).kind, LlFault::kNone);
  for (int peer : {0, 1, 15}) {
    const LlFault s = ll_fault(ll_fault_word(LlFault::kSilent, peer, 0));
    EXPECT_EQ(s.kind, LlFault::kSilent);
    EXPECT_EQ(s.peer, peer);
    const LlFault o = ll_fault(ll_fault_word(LlFault::kOtherCall, peer, 0xdeadbeef));
    EXPECT_EQ(o.kind, LlFault::kOtherCall);
    EXPECT_EQ(o.peer, peer);
    EXPECT_EQ(o.their_key, 0xdeadbeefu);
    EXPECT_NE(ll_fault_word(LlFault::kSilent, peer, 0), 0u) << "a fault never reads as none";
  }
}

}  // namespace
}  // namespace efacoll

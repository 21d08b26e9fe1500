// efacoll-bench's size and bandwidth arithmetic against values worked out by hand from
// nccl-tests' definitions (doc/PERFORMANCE.md there).
#include <gtest/gtest.h>

#include "bandwidth.h"

namespace efacoll_bench {
namespace {

TEST(BenchBandwidth, AllreduceSizeIsTheVector) {
  // 1 MiB of floats on 4 ranks in 1 ms: algbw = 1048576 B / 1e-3 s = 1.048576 GB/s,
  // busbw = algbw * 2 * 3 / 4 = 1.572864 GB/s.
  EXPECT_EQ(count_per_rank(Collective::kAllreduce, 4, DataType::kFloat, 1048576), 262144u);
  EXPECT_EQ(measured_bytes(Collective::kAllreduce, 4, DataType::kFloat, 262144), 1048576u);
  EXPECT_DOUBLE_EQ(algbw_gbps(1048576, 1e-3), 1.048576);
  EXPECT_DOUBLE_EQ(busbw_gbps(Collective::kAllreduce, 4, 1048576, 1e-3), 1.572864);
}

TEST(BenchBandwidth, AllgatherSizeIsTheGatheredVector) {
  // 32 KiB gathered from 8 ranks of int32: 1024 elements each. In 2 us: algbw 16.384 GB/s,
  // busbw = 16.384 * 7 / 8 = 14.336 GB/s.
  EXPECT_EQ(count_per_rank(Collective::kAllgather, 8, DataType::kInt32, 32768), 1024u);
  EXPECT_EQ(measured_bytes(Collective::kAllgather, 8, DataType::kInt32, 1024), 32768u);
  EXPECT_DOUBLE_EQ(algbw_gbps(32768, 2e-6), 16.384);
  EXPECT_DOUBLE_EQ(busbw_gbps(Collective::kAllgather, 8, 32768, 2e-6), 14.336);
}

TEST(BenchBandwidth, ReduceScatterSizeIsWhatEachRankSends) {
  // 100 B asked on 3 ranks of double: 4 elements each (100 / 24), so 96 B are measured. In
  // 1 us: algbw 0.096 GB/s, busbw = 0.096 * 2 / 3 = 0.064 GB/s. Both reduce-scatters alike.
  for (Collective c : {Collective::kReduceScatter, Collective::kReduceScatterBlock}) {
    EXPECT_EQ(count_per_rank(c, 3, DataType::kDouble, 100), 4u);
    EXPECT_EQ(measured_bytes(c, 3, DataType::kDouble, 4), 96u);
    EXPECT_DOUBLE_EQ(busbw_gbps(c, 3, 96, 1e-6), 0.064);
  }
}

TEST(BenchBandwidth, BusFactors) {
  EXPECT_DOUBLE_EQ(bus_factor(Collective::kAllreduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::kAllreduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::kAllgather, 2), 0.5);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::kReduceScatter, 4), 0.75);
}

TEST(BenchBandwidth, OneRankMovesNothingOverTheBus) {
  // n = 1: (n - 1) / n = 0. algbw is still S / t.
  EXPECT_DOUBLE_EQ(algbw_gbps(4096, 1e-6), 4.096);
  for (Collective c : {Collective::kAllreduce, Collective::kAllgather, Collective::kReduceScatter,
                       Collective::kReduceScatterBlock}) {
    EXPECT_DOUBLE_EQ(bus_factor(c, 1), 0.0);
    EXPECT_DOUBLE_EQ(busbw_gbps(c, 1, 4096, 1e-6), 0.0);
    EXPECT_EQ(count_per_rank(c, 1, DataType::kInt8, 4096), 4096u);
  }
}

TEST(BenchBandwidth, NoTimeNoBandwidth) {
  EXPECT_DOUBLE_EQ(algbw_gbps(4096, 0), 0.0);
  EXPECT_DOUBLE_EQ(busbw_gbps(Collective::kAllreduce, 4, 4096, -1), 0.0);
}

TEST(BenchBandwidth, SizeStepsRoundDownAndSkipWhatHoldsNothing) {
  auto bytes_of = [](const std::vector<SizeStep>& steps) {
    std::vector<size_t> b;
    for (const SizeStep& s : steps) b.push_back(s.bytes);
    return b;
  };
  EXPECT_EQ(bytes_of(size_steps(Collective::kAllreduce, 4, DataType::kFloat, 8, 64, 2)),
            (std::vector<size_t>{8, 16, 32, 64}));
  // 8 B is half an int32 per rank on 4 ranks: left out.
  const auto gather = size_steps(Collective::kAllgather, 4, DataType::kInt32, 8, 256, 4);
  EXPECT_EQ(bytes_of(gather), (std::vector<size_t>{32, 128}));
  EXPECT_EQ(gather[0].count_per_rank, 2u);
  // 3 ranks of int8: 8 -> 2 each (6 B), 16 -> 5 (15 B), 32 -> 10 (30 B), 64 -> 21 (63 B).
  EXPECT_EQ(bytes_of(size_steps(Collective::kReduceScatter, 3, DataType::kInt8, 8, 64, 2)),
            (std::vector<size_t>{6, 15, 30, 63}));
  // The last step stops at max and does not overflow.
  EXPECT_EQ(size_steps(Collective::kAllreduce, 2, DataType::kInt8, 1, SIZE_MAX, 2).size(), 64u);
}

}  // namespace
}  // namespace efacoll_bench

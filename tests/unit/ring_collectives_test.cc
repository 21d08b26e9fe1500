// Every algorithm (forced as EFACOLL_ALGO forces it) x ranks {1..8, 16} x counts {0, 1,
// ranks-1, odd, multi-chunk} x every allowed (type, op) x in-place, ranks as threads over the
// loopback transport, results compared with the independent reference.
#include <gtest/gtest.h>

#include <cstring>

#include "reference.h"
#include "thread_ranks.h"
#include "tune/algo.h"

namespace efacoll {
namespace testing {
namespace {

constexpr size_t kChunkBytes = 64;  // small, so that multi-chunk pipelines run on small data

std::vector<size_t> counts_for(int n) {
  // 300 elements of 8 bytes span several 64-byte chunks per block even at 8 ranks.
  return {0, 1, static_cast<size_t>(n - 1), 37, 300};
}

RankSetup loopback_setup() {
  RankSetup s;
  s.config.chunk_bytes = kChunkBytes;
  s.config.rd_max_bytes = 0;  // unless forced: the ring at every size
  return s;
}

std::string where(const char* coll, DType t, ROp op, size_t count, bool inplace) {
  return std::string(coll) + " " + dtype_name(t) + " " + op_name(op) + " count " +
         std::to_string(count) + (inplace ? " in place" : "");
}

void check(std::vector<std::string>* failures, const std::string& what, const Bytes& got,
           const Bytes& want, DType type) {
  std::string diff = compare(got, want, type);
  if (!diff.empty()) failures->push_back(what + ": " + diff);
}

void allreduce_case(int rank, int n, Comm& comm, DType t, ROp op, size_t count, bool inplace,
                    std::vector<std::string>* failures) {
  const size_t esize = dtype_size(t);
  Bytes input = make_input(t, op, rank, count);
  const Bytes before = input;
  Bytes out(count * esize, 0xA5);  // poisoned
  if (inplace) out = input;
  CollArgs a;
  a.kind = CollKind::kAllreduce;
  a.sendbuf = inplace ? nullptr : input.data();
  a.recvbuf = out.data();
  a.count = count;
  a.dtype = t;
  a.op = op;
  a.inplace = inplace;
  std::string what = where("allreduce", t, op, count, inplace);
  Status st = comm.run(a);
  if (!st.is_ok()) return failures->push_back(what + ": " + st.to_string());
  check(failures, what, out, expected_reduction(t, op, n, count), t);
  if (input != before) failures->push_back(what + ": send buffer was modified");
}

void reduce_scatter_case(int rank, int n, Comm& comm, DType t, ROp op, size_t count, bool inplace,
                         bool with_zeros, std::vector<std::string>* failures) {
  const size_t esize = dtype_size(t);
  // Irregular blocks: even split, or every other rank receiving nothing.
  std::vector<size_t> counts(n);
  size_t total = 0;
  for (int r = 0; r < n; ++r) {
    counts[r] = with_zeros ? (r % 2 ? 0 : count) : count / n + (static_cast<size_t>(r) < count % n);
    total += counts[r];
  }
  size_t offset = 0;
  for (int r = 0; r < rank; ++r) offset += counts[r];
  Bytes input = make_input(t, op, rank, total);
  const Bytes before = input;
  Bytes out = inplace ? input : Bytes(counts[rank] * esize, 0xA5);
  CollArgs a;
  a.kind = CollKind::kReduceScatter;
  a.sendbuf = inplace ? nullptr : input.data();
  a.recvbuf = out.data();
  a.recvcounts = counts.data();
  a.dtype = t;
  a.op = op;
  a.inplace = inplace;
  std::string what =
      where(with_zeros ? "reduce_scatter(zeros)" : "reduce_scatter", t, op, total, inplace);
  Status st = comm.run(a);
  if (!st.is_ok()) return failures->push_back(what + ": " + st.to_string());
  Bytes full = expected_reduction(t, op, n, total);
  Bytes want(full.begin() + offset * esize, full.begin() + (offset + counts[rank]) * esize);
  out.resize(counts[rank] * esize);
  check(failures, what, out, want, t);
  if (input != before) failures->push_back(what + ": send buffer was modified");
}

void allgather_case(int rank, int n, Comm& comm, size_t count, bool inplace,
                    std::vector<std::string>* failures) {
  Bytes mine = make_input(DType::kUint8, ROp::kBxor, rank, count);
  Bytes out(count * n, 0xA5);
  if (inplace) std::memcpy(out.data() + rank * count, mine.data(), count);
  CollArgs a;
  a.kind = CollKind::kAllgather;
  a.sendbuf = inplace ? nullptr : mine.data();
  a.recvbuf = out.data();
  a.count = count;
  a.dtype = DType::kByte;
  a.inplace = inplace;
  std::string what = where("allgather", DType::kByte, ROp::kSum, count, inplace);
  Status st = comm.run(a);
  if (!st.is_ok()) return failures->push_back(what + ": " + st.to_string());
  Bytes want;
  for (int r = 0; r < n; ++r) {
    Bytes b = make_input(DType::kUint8, ROp::kBxor, r, count);
    want.insert(want.end(), b.begin(), b.end());
  }
  check(failures, what, out, want, DType::kByte);
}

void expect_no_failures(const std::vector<std::string>& failures) {
  for (size_t i = 0; i < failures.size() && i < 20; ++i) ADD_FAILURE() << failures[i];
  EXPECT_TRUE(failures.empty()) << failures.size() << " failures";
}

// (ranks, algorithm forced with EFACOLL_ALGO's grammar)
using AlgoRanks = std::tuple<int, std::string>;

// "allreduce:ring" or "allreduce:ring_c3" (three channels, as EFACOLL_CHANNELS=3).
RankSetup forced(const std::string& spec) {
  RankSetup s = loopback_setup();
  std::string algo = spec;
  const size_t c = spec.find("_c");
  if (c != std::string::npos) {
    algo = spec.substr(0, c);
    s.config.channels = std::stoi(spec.substr(c + 2));
  }
  Status st = parse_algo_overrides(algo, &s.config.algo);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return s;
}

std::string param_name(const ::testing::TestParamInfo<AlgoRanks>& info) {
  return std::get<1>(info.param) + "_n" + std::to_string(std::get<0>(info.param));
}

const auto kRanks = ::testing::Values(1, 2, 3, 4, 5, 6, 7, 8, 16);

class AllreduceAlgos : public ::testing::TestWithParam<AlgoRanks> {};
TEST_P(AllreduceAlgos, EveryTypeOpCountInPlace) {
  const auto [n, algo] = GetParam();
  expect_no_failures(run_ranks(n, forced("allreduce:" + algo), [&](RankContext& c) {
    for (auto pair : allowed_pairs())
      for (size_t count : counts_for(n))
        for (bool inplace : {false, true})
          allreduce_case(c.rank, n, c.comm, pair.first, pair.second, count, inplace, c.failures);
  }));
}
INSTANTIATE_TEST_SUITE_P(Algos, AllreduceAlgos,
                         ::testing::Combine(kRanks,
                                            ::testing::Values("ring", "tree", "rd", "ring_c3",
                                                              "tree_c2", "rd_c3")),
                         param_name);

class ReduceScatterAlgos : public ::testing::TestWithParam<AlgoRanks> {};
TEST_P(ReduceScatterAlgos, EveryTypeOpCountInPlace) {
  const auto [n, algo] = GetParam();
  expect_no_failures(run_ranks(n, forced("reduce_scatter:" + algo), [&](RankContext& c) {
    for (auto pair : allowed_pairs())
      for (size_t count : counts_for(n))
        for (bool inplace : {false, true})
          for (bool zeros : {false, true})
            reduce_scatter_case(c.rank, n, c.comm, pair.first, pair.second, count, inplace, zeros,
                                c.failures);
  }));
}
INSTANTIATE_TEST_SUITE_P(Algos, ReduceScatterAlgos,
                         ::testing::Combine(kRanks, ::testing::Values("ring", "rh", "ring_c3")),
                         param_name);

class AllgatherAlgos : public ::testing::TestWithParam<AlgoRanks> {};
TEST_P(AllgatherAlgos, EveryCountInPlace) {
  const auto [n, algo] = GetParam();
  expect_no_failures(run_ranks(n, forced("allgather:" + algo), [&](RankContext& c) {
    for (size_t count : {size_t(0), size_t(1), size_t(n - 1), size_t(37), size_t(1000)})
      for (bool inplace : {false, true})
        allgather_case(c.rank, n, c.comm, count, inplace, c.failures);
  }));
}
INSTANTIATE_TEST_SUITE_P(Algos, AllgatherAlgos,
                         ::testing::Combine(kRanks, ::testing::Values("ring", "rd", "ring_c4")),
                         param_name);

TEST(Hierarchical, AllreduceOnDeclaredNodesMatchesTheReference) {
  for (auto [n, per_node] : {std::make_pair(4, 2), std::make_pair(6, 3), std::make_pair(8, 2)}) {
    RankSetup setup = loopback_setup();
    setup.node_size = per_node;
    setup.config.algo.allreduce = Algo::kHier;
    expect_no_failures(run_ranks(n, setup, [&](RankContext& c) {
      for (auto pair : allowed_pairs()) {
        for (size_t count : counts_for(n)) {
          for (bool inplace : {false, true}) {
            allreduce_case(c.rank, n, c.comm, pair.first, pair.second, count, inplace, c.failures);
          }
        }
      }
    }));
  }
}

// The hierarchical schedule runs on one channel, even where EFACOLL_CHANNELS asks for more: its
// phases' message ids do not leave room for channels (every such call failed to build).
TEST(Hierarchical, ForcedChannelsLeaveItOnOneChannelAndExact) {
  for (auto [n, per_node, channels] : {std::make_tuple(4, 2, 2), std::make_tuple(6, 3, 3)}) {
    RankSetup setup = loopback_setup();
    setup.node_size = per_node;
    setup.config.channels = channels;
    setup.config.algo.allreduce = Algo::kHier;
    setup.config.chunk_bytes = 8192;
    expect_no_failures(run_ranks(n, setup, [&](RankContext& c) {
      for (size_t count : {size_t(60001), size_t(250003)}) {
        for (bool inplace : {false, true}) {
          allreduce_case(c.rank, n, c.comm, DType::kFloat32, ROp::kSum, count, inplace, c.failures);
        }
      }
    }));
  }
}

// Across declared nodes each channel's ring enters every node at a different rank.
TEST(Channels, RotatedRingsAcrossDeclaredNodesMatchTheReference) {
  for (auto [n, per_node, channels] : {std::make_tuple(4, 2, 2), std::make_tuple(6, 3, 3),
                                       std::make_tuple(8, 2, 4), std::make_tuple(6, 2, 5)}) {
    RankSetup setup = loopback_setup();
    setup.node_size = per_node;
    setup.config.channels = channels;
    ASSERT_TRUE(parse_algo_overrides("ring", &setup.config.algo).is_ok());
    expect_no_failures(run_ranks(n, setup, [&](RankContext& c) {
      for (auto pair :
           {std::make_pair(DType::kInt32, ROp::kSum), std::make_pair(DType::kFloat64, ROp::kMax)}) {
        for (size_t count : counts_for(n)) {
          for (bool inplace : {false, true}) {
            allreduce_case(c.rank, n, c.comm, pair.first, pair.second, count, inplace, c.failures);
            reduce_scatter_case(c.rank, n, c.comm, pair.first, pair.second, count, inplace,
                                count % 2 == 1, c.failures);
            allgather_case(c.rank, n, c.comm, count, inplace, c.failures);
          }
        }
      }
    }));
  }
}

// EFACOLL_TUNE=calibrate runs collectives of every algorithm while the communicator is made;
// the calls after it must still meet (sequence numbers, tags) and be exact.
TEST(Calibration, CommunicatorsCalibrateThenComputeExactly) {
  for (int n : {2, 3, 4}) {
    RankSetup setup = loopback_setup();
    setup.config.calibrate = true;
    setup.config.chunk_forced = false;
    expect_no_failures(run_ranks(n, setup, [&](RankContext& c) {
      for (size_t count : {size_t(1), size_t(37), size_t(5000)}) {
        allreduce_case(c.rank, n, c.comm, DType::kInt32, ROp::kSum, count, false, c.failures);
        reduce_scatter_case(c.rank, n, c.comm, DType::kFloat64, ROp::kMax, count, true, false,
                            c.failures);
        allgather_case(c.rank, n, c.comm, count, false, c.failures);
      }
    }));
  }
}

TEST(Hierarchical, NodeShapes) {
  EXPECT_EQ(equal_contiguous_nodes({"a", "a", "b", "b"}), 2);
  EXPECT_EQ(equal_contiguous_nodes({"a", "a", "a", "b", "b", "b"}), 3);
  EXPECT_EQ(equal_contiguous_nodes({"a", "a", "a", "a"}), 0) << "one node: no hierarchy";
  EXPECT_EQ(equal_contiguous_nodes({"a", "b", "c"}), 0) << "one rank per node: the flat ring";
  EXPECT_EQ(equal_contiguous_nodes({"a", "a", "b", "b", "b", "b"}), 0) << "unequal nodes";
  EXPECT_EQ(equal_contiguous_nodes({"a", "b", "a", "b"}), 0) << "interleaved ranks";
  EXPECT_EQ(equal_contiguous_nodes({"a", "a", "b", "b", "a", "a"}), 0) << "a node split in two";
}

TEST(RingCollectives, InterleavedCallsOnTwoCommunicatorsStayApart) {
  // A second communicator over the same endpoints, calls interleaved: tags keep them apart.
  const int n = 3;
  expect_no_failures(run_ranks(n, loopback_setup(), [&](RankContext& c) {
    std::unique_ptr<Comm> second;
    Status st = c.engine.create_comm(c.bootstrap, &second);
    if (!st.is_ok()) return c.failures->push_back(st.to_string());
    if (second->id() == c.comm.id()) c.failures->push_back("both communicators got one id");
    for (int i = 0; i < 20; ++i) {
      allreduce_case(c.rank, n, c.comm, DType::kInt32, ROp::kSum, 100 + i, false, c.failures);
      allreduce_case(c.rank, n, *second, DType::kFloat64, ROp::kMax, 50, i % 2 == 0, c.failures);
    }
  }));
}

}  // namespace
}  // namespace testing
}  // namespace efacoll

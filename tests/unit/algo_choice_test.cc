// EFACOLL_ALGO's grammar and the rule that picks an algorithm when nothing is forced.
#include <gtest/gtest.h>

#include "tune/algo.h"

namespace efacoll {
namespace {

TEST(AlgoOverrides, OneNameAppliesWhereItExists) {
  AlgoOverrides o;
  ASSERT_TRUE(parse_algo_overrides("tree", &o).is_ok());
  EXPECT_EQ(o.allreduce, Algo::kTree);
  EXPECT_EQ(o.allgather, Algo::kAuto) << "no tree allgather: left to the library";
  EXPECT_EQ(o.reduce_scatter, Algo::kAuto);
  ASSERT_TRUE(parse_algo_overrides("rd", &o).is_ok());
  EXPECT_EQ(o.allreduce, Algo::kRecursive);
  EXPECT_EQ(o.allgather, Algo::kRecursive);
  EXPECT_EQ(o.reduce_scatter, Algo::kRecursive) << "rd and rh name the same family";
  ASSERT_TRUE(parse_algo_overrides("auto", &o).is_ok());
  EXPECT_EQ(o.allreduce, Algo::kAuto);
}

TEST(AlgoOverrides, InNodeProtocolsForEveryCollectiveButNotForTheFabricTuner) {
  AlgoOverrides o;
  ASSERT_TRUE(parse_algo_overrides("ll", &o).is_ok());
  EXPECT_EQ(o.allreduce, Algo::kLl);
  EXPECT_EQ(o.allgather, Algo::kLl);
  EXPECT_EQ(o.reduce_scatter, Algo::kLl);
  ASSERT_TRUE(parse_algo_overrides("allgather:ipc", &o).is_ok());
  EXPECT_EQ(o.allgather, Algo::kIpc);
  EXPECT_FALSE(fabric_algo(Algo::kLl));
  EXPECT_TRUE(fabric_algo(Algo::kTree));
  // A schedule over the fabric (host buffers, or across nodes) is chosen as if nothing were
  // forced.
  AlgoInputs in;
  in.nranks = 4;
  in.bytes = 8;
  ASSERT_TRUE(parse_algo_overrides("ll", &o).is_ok());
  EXPECT_EQ(choose_algo(in, o), choose_algo(in, {}));
}

TEST(AlgoOverrides, PerCollective) {
  AlgoOverrides o;
  ASSERT_TRUE(parse_algo_overrides("allreduce:tree,allgather:rd,reduce_scatter:ring", &o).is_ok());
  EXPECT_EQ(o.for_kind(CollKind::kAllreduce), Algo::kTree);
  EXPECT_EQ(o.for_kind(CollKind::kAllgather), Algo::kRecursive);
  EXPECT_EQ(o.for_kind(CollKind::kReduceScatter), Algo::kRing);
}

TEST(AlgoOverrides, MistakesAreNamed) {
  AlgoOverrides o;
  Status st = parse_algo_overrides("bogus", &o);
  EXPECT_EQ(st.code(), Code::kInvalid);
  EXPECT_NE(st.message().find("'bogus'"), std::string::npos) << st.message();
  st = parse_algo_overrides("allgather:tree", &o);
  EXPECT_NE(st.message().find("tree does not exist for allgather"), std::string::npos);
  st = parse_algo_overrides("alltoall:ring", &o);
  EXPECT_NE(st.message().find("unknown collective 'alltoall'"), std::string::npos);
  EXPECT_FALSE(parse_algo_overrides("allreduce:", &o).is_ok());
}

TEST(ChooseAlgo, RuleWithoutOverrides) {
  AlgoInputs in;
  in.nranks = 8;
  in.small_bytes = 65536;
  for (CollKind k : {CollKind::kAllreduce, CollKind::kAllgather, CollKind::kReduceScatter}) {
    in.kind = k;
    in.bytes = 65536;
    EXPECT_EQ(choose_algo(in, {}), Algo::kRecursive) << coll_name(k);
    in.bytes = 65537;
    EXPECT_EQ(choose_algo(in, {}), Algo::kRing) << coll_name(k);
  }
  in.kind = CollKind::kAllreduce;
  in.ranks_per_node = 4;
  EXPECT_EQ(choose_algo(in, {}), Algo::kHier) << "across nodes, allreduce goes hierarchical";
  in.kind = CollKind::kAllgather;
  EXPECT_EQ(choose_algo(in, {}), Algo::kRing);
}

TEST(ChooseAlgo, ForcedWinsWhereItApplies) {
  AlgoInputs in;
  in.nranks = 8;
  in.bytes = 1 << 20;
  AlgoOverrides o;
  ASSERT_TRUE(parse_algo_overrides("hier", &o).is_ok());
  EXPECT_EQ(choose_algo(in, o), Algo::kRing) << "hier needs several nodes";
  in.ranks_per_node = 4;
  EXPECT_EQ(choose_algo(in, o), Algo::kHier);
  ASSERT_TRUE(parse_algo_overrides("tree", &o).is_ok());
  EXPECT_EQ(choose_algo(in, o), Algo::kTree) << "forced beats the multi-node rule";
}

}  // namespace
}  // namespace efacoll

// The hierarchical allreduce, with node membership declared: exact against the reference for
// nodes of 1 to 4 ranks, every type/op family, counts that do not divide, in place.
#include "coll/hier_allreduce.h"

#include <gtest/gtest.h>

#include "reference.h"
#include "schedule_runner.h"

namespace efacoll {
namespace {

TEST(HierAllreduce, ExactOnDeclaredNodes) {
  const std::pair<int, int> layouts[] = {{4, 2}, {6, 2}, {6, 3}, {8, 4}, {4, 1}, {3, 3}, {8, 2}};
  for (auto [n, per_node] : layouts) {
    for (size_t count : {size_t(0), size_t(1), size_t(n - 1), size_t(37), size_t(301)}) {
      for (bool inplace : {false, true}) {
        for (auto [type, op] :
             {std::make_pair(DType::kInt32, ROp::kSum), std::make_pair(DType::kFloat64, ROp::kMax),
              std::make_pair(DType::kUint8, ROp::kBxor), std::make_pair(DType::kBool, ROp::kLor),
              std::make_pair(DType::kComplex64, ROp::kProd)}) {
          testing::ScheduleRun run;
          run.nranks = n;
          run.count = count;
          run.type = type;
          run.op = op;
          run.inplace = inplace;
          run.build = [&](int rank) {
            HierArgs a;
            a.rank = rank;
            a.nranks = n;
            a.ranks_per_node = per_node;
            a.count = count;
            a.elem_size = dtype_size(type);
            a.inplace = inplace;
            a.chunk_bytes = 16;  // several chunks per slice
            Schedule s;
            EXPECT_TRUE(build_hier_allreduce(a, &s).is_ok());
            return s;
          };
          auto failures = testing::run_allreduce_schedules(run);
          for (int r = 0; r < n; ++r) {
            EXPECT_EQ(failures[r], "") << n << " ranks, " << per_node << " per node, count "
                                       << count << (inplace ? " in place " : " ")
                                       << dtype_name(type) << " " << op_name(op) << ", rank " << r;
          }
        }
      }
    }
  }
}

TEST(HierAllreduce, RefusesUnequalNodes) {
  HierArgs a;
  a.nranks = 5;
  a.ranks_per_node = 2;
  Schedule s;
  EXPECT_EQ(build_hier_allreduce(a, &s).code(), Code::kInvalid);
}

}  // namespace
}  // namespace efacoll

// What efacoll sets for fork() before libfabric's efa provider initialises.
#include "policy/fork_safety.h"

#include <gtest/gtest.h>

namespace efacoll {
namespace {

TEST(ForkSafety, EfaGetsForkSupportWithoutHugePages) {
  SteeringPlan plan = plan_fork_safety(true, {});
  ASSERT_EQ(plan.set.size(), 2u);
  EXPECT_EQ(plan.set[0], std::make_pair(std::string("FI_EFA_FORK_SAFE"), std::string("1")));
  EXPECT_EQ(plan.set[1], std::make_pair(std::string("FI_EFA_USE_HUGE_PAGE"), std::string("0")));
  ASSERT_EQ(plan.messages.size(), 1u);
  EXPECT_NE(plan.messages[0].find("huge pages"), std::string::npos);
}

TEST(ForkSafety, NothingWithoutEfa) {
  SteeringPlan plan = plan_fork_safety(false, {});
  EXPECT_TRUE(plan.set.empty());
  EXPECT_TRUE(plan.messages.empty());
}

// FI_EFA_FORK_SAFE=1 next to FI_EFA_USE_HUGE_PAGE=1 makes efa abort: the user's choice stands.
TEST(ForkSafety, TheUsersChoiceStands) {
  for (const char* name :
       {"FI_EFA_FORK_SAFE", "RDMAV_FORK_SAFE", "IBV_FORK_SAFE", "FI_EFA_USE_HUGE_PAGE"}) {
    SteeringPlan plan = plan_fork_safety(true, {{name, "1"}});
    EXPECT_TRUE(plan.set.empty()) << name;
    ASSERT_EQ(plan.messages.size(), 1u) << name;
    EXPECT_NE(plan.messages[0].find(std::string(name) + "=1 set by the user"), std::string::npos);
  }
}

}  // namespace
}  // namespace efacoll

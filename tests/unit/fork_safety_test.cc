// What efacoll sets for fork() before libfabric's efa provider initialises, by kernel.
#include "policy/fork_safety.h"

#include <gtest/gtest.h>

namespace efacoll {
namespace {

using Var = std::pair<std::string, std::string>;

const Var kForkSafe = {"FI_EFA_FORK_SAFE", "1"};
const Var kNoHugePages = {"FI_EFA_USE_HUGE_PAGE", "0"};

// From 5.13 efa ignores FI_EFA_FORK_SAFE and keeps huge pages, which make fork() fail with
// ENOMEM: FI_EFA_USE_HUGE_PAGE=0 goes with it.
TEST(ForkSafety, CopyOnForkKernelsGetHugePagesOff) {
  for (const char* release :
       {"5.13.0", "5.15.0-1051-aws", "6.1.0-18-cloud-amd64", "6.8.0-1015-aws", "10.0.0"}) {
    SteeringPlan plan = plan_fork_safety(true, release, {});
    EXPECT_EQ(plan.set, (std::vector<Var>{kForkSafe, kNoHugePages})) << release;
    ASSERT_EQ(plan.messages.size(), 1u) << release;
    EXPECT_NE(plan.messages[0].find(std::string("kernel ") + release), std::string::npos)
        << plan.messages[0];
    EXPECT_NE(plan.messages[0].find("ENOMEM"), std::string::npos) << plan.messages[0];
  }
}

// Before 5.13 efa's fork support (FI_EFA_FORK_SAFE=1) turns huge pages off by itself: efacoll
// does not set FI_EFA_USE_HUGE_PAGE there.
TEST(ForkSafety, OlderKernelsGetForkSupportOnly) {
  for (const char* release : {"5.12.19", "5.10.215-203.850.amzn2.x86_64", "5.4.0-1103-aws",
                              "4.14.336-257.562.amzn2.x86_64"}) {
    SteeringPlan plan = plan_fork_safety(true, release, {});
    EXPECT_EQ(plan.set, std::vector<Var>{kForkSafe}) << release;
    ASSERT_EQ(plan.messages.size(), 1u) << release;
    EXPECT_NE(plan.messages[0].find("older than 5.13"), std::string::npos) << plan.messages[0];
  }
}

// A release that cannot be read is planned for as a recent kernel: both variables together
// are safe on any kernel.
TEST(ForkSafety, UnreadableKernelGetsBoth) {
  for (const char* release : {"", "unknown", "linux"}) {
    SteeringPlan plan = plan_fork_safety(true, release, {});
    EXPECT_EQ(plan.set, (std::vector<Var>{kForkSafe, kNoHugePages})) << release;
    ASSERT_EQ(plan.messages.size(), 1u) << release;
    EXPECT_NE(plan.messages[0].find("kernel release unknown"), std::string::npos);
  }
}

TEST(ForkSafety, KernelCopiesPinnedPagesFrom513) {
  EXPECT_FALSE(kernel_copies_pinned_pages_on_fork("5.12.19"));
  EXPECT_TRUE(kernel_copies_pinned_pages_on_fork("5.13.0"));
  EXPECT_TRUE(kernel_copies_pinned_pages_on_fork("6.0"));
  EXPECT_FALSE(kernel_copies_pinned_pages_on_fork("4.20.17"));
  EXPECT_FALSE(kernel_copies_pinned_pages_on_fork(""));
}

TEST(ForkSafety, NothingWithoutEfa) {
  for (const char* release : {"5.10.0", "6.1.0"}) {
    SteeringPlan plan = plan_fork_safety(false, release, {});
    EXPECT_TRUE(plan.set.empty());
    EXPECT_TRUE(plan.messages.empty());
  }
}

// FI_EFA_FORK_SAFE=1 next to FI_EFA_USE_HUGE_PAGE=1 makes efa abort: the user's choice stands,
// on every kernel.
TEST(ForkSafety, TheUsersChoiceStands) {
  for (const char* release : {"5.10.0", "6.1.0"}) {
    for (const char* name :
         {"FI_EFA_FORK_SAFE", "RDMAV_FORK_SAFE", "IBV_FORK_SAFE", "FI_EFA_USE_HUGE_PAGE"}) {
      SteeringPlan plan = plan_fork_safety(true, release, {{name, "1"}});
      EXPECT_TRUE(plan.set.empty()) << name;
      ASSERT_EQ(plan.messages.size(), 1u) << name;
      EXPECT_NE(plan.messages[0].find(std::string(name) + "=1 set by the user"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace efacoll

#include "policy/fork_safety.h"

namespace efacoll {

// FI_EFA_FORK_SAFE=1 (as aws-ofi-nccl sets it) and FI_EFA_USE_HUGE_PAGE=0. Before Linux 5.13 /
// rdma-core 35, efa aborts the process at its first fork() without fork support. Later kernels
// copy pinned pages for the child instead, and then the huge-page bounce buffers are what makes
// fork() fail with ENOMEM (no free huge page to copy into); some libfabric versions let the
// kernel's copy-on-fork take precedence over FI_EFA_FORK_SAFE and keep huge pages, hence the
// second variable. The price: efa's bounce buffers on small pages. A user's own choice in any of
// these variables stands (fork support next to FI_EFA_USE_HUGE_PAGE=1 makes efa abort).
SteeringPlan plan_fork_safety(bool efa_present, const EnvMap& env) {
  SteeringPlan plan;
  if (!efa_present) return plan;
  for (const char* name :
       {"FI_EFA_FORK_SAFE", "RDMAV_FORK_SAFE", "IBV_FORK_SAFE", "FI_EFA_USE_HUGE_PAGE"}) {
    auto it = env.find(name);
    if (it == env.end()) continue;
    plan.messages.push_back(std::string("fork: ") + name + "=" + it->second +
                            " set by the user; FI_EFA_FORK_SAFE and FI_EFA_USE_HUGE_PAGE left "
                            "alone");
    return plan;
  }
  plan.set.emplace_back("FI_EFA_FORK_SAFE", "1");
  plan.set.emplace_back("FI_EFA_USE_HUGE_PAGE", "0");
  plan.messages.push_back(
      "fork: set FI_EFA_FORK_SAFE=1 and FI_EFA_USE_HUGE_PAGE=0 (child processes such as data "
      "loader workers stay safe; efa's bounce buffers avoid huge pages)");
  return plan;
}

}  // namespace efacoll

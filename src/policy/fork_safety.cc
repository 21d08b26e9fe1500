#include "policy/fork_safety.h"

#include "common/kernel_release.h"

namespace efacoll {

bool kernel_copies_pinned_pages_on_fork(const std::string& kernel_release) {
  return kernel_release_at_least(kernel_release, 5, 13);
}

// FI_EFA_FORK_SAFE=1 on every kernel, as aws-ofi-nccl sets it. Before Linux 5.13 / rdma-core 35
// efa aborts the process at its first fork() without fork support; with it, efa keeps its
// bounce buffers off huge pages by itself, so FI_EFA_USE_HUGE_PAGE=0 adds nothing there.
// From 5.13 the kernel copies pinned pages for the child, rdma-core reports fork support as
// unneeded and efa ignores FI_EFA_FORK_SAFE: its bounce buffers go on huge pages wherever the
// huge page pool has some, and a fork() that finds no free huge page to copy them into fails
// with ENOMEM. There (and where the release cannot be read) FI_EFA_USE_HUGE_PAGE=0 is set:
// whether the program forks after MPI_Init is unknown here (PyTorch's DataLoader workers do by
// default), a failed fork() ends the job, and libfabric rates the gain of huge pages as small. A
// program that never forks keeps them with FI_EFA_USE_HUGE_PAGE=1. The user's own choice in any
// of these variables stands, and none is then set (a fork-safe efa asked for huge pages aborts).
SteeringPlan plan_fork_safety(bool efa_present, const std::string& kernel_release,
                              const EnvMap& env) {
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
  const bool readable = kernel_release_at_least(kernel_release, 0, 0);
  if (readable && !kernel_copies_pinned_pages_on_fork(kernel_release)) {
    plan.messages.push_back("fork: set FI_EFA_FORK_SAFE=1 (kernel " + kernel_release +
                            " is older than 5.13: efa needs its fork support, which also keeps "
                            "its bounce buffers off huge pages)");
    return plan;
  }
  plan.set.emplace_back("FI_EFA_USE_HUGE_PAGE", "0");
  const std::string kernel =
      readable ? "kernel " + kernel_release + " copies registered pages for a child"
               : "kernel release unknown, taken as one that copies registered pages for a child";
  plan.messages.push_back("fork: set FI_EFA_FORK_SAFE=1 and FI_EFA_USE_HUGE_PAGE=0 (" + kernel +
                          ": efa's bounce buffers kept off huge pages, where they would make "
                          "fork() fail with ENOMEM; FI_EFA_USE_HUGE_PAGE=1 keeps huge pages in "
                          "a program that never forks)");
  return plan;
}

SteeringPlan plan_fork_safety(bool efa_present, const EnvMap& env) {
  return plan_fork_safety(efa_present, running_kernel_release(), env);
}

}  // namespace efacoll

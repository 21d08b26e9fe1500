// The one place that decides a call's path (tune/plan.h): each rule, and that the costly
// questions (a trial's meeting, the hierarchical sub-communicators' creation) are asked only
// where the path depends on them.
#include "tune/plan.h"

#include <gtest/gtest.h>

#include "tune/shared_gpu_paths.h"

namespace efacoll {
namespace {

class CountingQuestions : public PlanQuestions {
 public:
  TunedChoice fabric_choice() override {
    ++fabric_asked;
    return fabric;
  }
  bool hierarchical_usable() override {
    ++hier_asked;
    return hier_usable;
  }
  TunedChoice fabric;
  bool hier_usable = true;
  int fabric_asked = 0, hier_asked = 0;
};

PlanFacts one_node_gpu_call(size_t bytes) {
  PlanFacts f;
  f.gpu = true;
  f.bytes = bytes;
  f.ipc = true;
  f.ll_set_up = true;
  f.ipc_direct = true;
  return f;
}

TEST(Plan, HostBuffersRunTheTunersFabricSchedule) {
  PlanFacts f;
  CountingQuestions q;
  q.fabric.algo = Algo::kTree;
  q.fabric.channels = 2;
  const Plan p = choose_plan(f, q);
  EXPECT_EQ(p.path, Path::kFabric);
  EXPECT_EQ(p.choice.algo, Algo::kTree);
  EXPECT_EQ(p.choice.channels, 2);
  EXPECT_EQ(q.fabric_asked, 1);
  EXPECT_EQ(q.hier_asked, 0);
}

TEST(Plan, InsideOneNodeTheLowLatencyProtocolWhenPredictedNoSlower) {
  PlanFacts f = one_node_gpu_call(4096);
  f.ll_fits = true;
  f.ll_us = 10;
  f.ipc_us = 30;
  CountingQuestions q;
  Plan p = choose_plan(f, q);
  EXPECT_EQ(p.path, Path::kLowLatency);
  EXPECT_EQ(p.choice.algo, Algo::kLl);
  EXPECT_DOUBLE_EQ(p.choice.predicted_us, 10);
  EXPECT_TRUE(p.advances_ll_sequence);
  EXPECT_FALSE(p.watch_ll_peers);
  // Never a trial's meeting for a call that does not run on the fabric.
  EXPECT_EQ(q.fabric_asked, 0);

  f.ll_us = 40;  // slower than IPC: IPC direct, watching for peers on the protocol
  p = choose_plan(f, q);
  EXPECT_EQ(p.path, Path::kIpcDirect);
  EXPECT_TRUE(p.watch_ll_peers);
  f.forced = Algo::kLl;
  EXPECT_EQ(choose_plan(f, q).path, Path::kLowLatency);
  f.ll_fits = false;  // forced, but it cannot carry the call
  f.ipc_direct = false;
  EXPECT_EQ(choose_plan(f, q).path, Path::kIpcRounds);
  EXPECT_EQ(q.fabric_asked, 0);
}

TEST(Plan, SmallGpuCallsTakeHostCopiesUnlessIpcIsForced) {
  PlanFacts f = one_node_gpu_call(1024);
  f.ll_us = 50;
  f.ipc_us = 20;
  f.ll_fits = true;
  f.host_copies_fit = true;
  CountingQuestions q;
  q.fabric.algo = Algo::kRecursive;
  Plan p = choose_plan(f, q);
  EXPECT_EQ(p.path, Path::kHostCopies);
  EXPECT_EQ(p.choice.algo, Algo::kRecursive);
  EXPECT_TRUE(p.watch_ll_peers);
  EXPECT_EQ(q.fabric_asked, 1);
  f.forced = Algo::kIpc;
  p = choose_plan(f, q);
  EXPECT_EQ(p.path, Path::kIpcDirect);
  EXPECT_EQ(q.fabric_asked, 1);
}

TEST(Plan, RanksSharingAGpuGoByTheMeasuredTimes) {
  PlanFacts f = one_node_gpu_call(1 << 20);
  f.ll_fits = true;
  f.ll_us = 1;  // the model would take the low-latency protocol; the measurement decides
  SharedGpuPick pick;
  pick.fabric_faster = true;
  pick.fabric_extra_us = 7;
  f.shared = &pick;
  CountingQuestions q;
  Plan p = choose_plan(f, q);
  EXPECT_EQ(p.path, Path::kFabric);
  EXPECT_DOUBLE_EQ(p.fabric_extra_us, 7);
  EXPECT_FALSE(p.watch_ll_peers);  // off the node's protocols: nothing to watch there
  EXPECT_TRUE(p.advances_ll_sequence);
  f.host_copies_fit = true;
  EXPECT_EQ(choose_plan(f, q).path, Path::kHostCopies);

  pick.fabric_faster = false;
  pick.ipc_us = 12;
  p = choose_plan(f, q);  // IPC measured faster: even where host copies would fit
  EXPECT_EQ(p.path, Path::kIpcDirect);
  EXPECT_EQ(p.choice.algo, Algo::kIpc);
  EXPECT_DOUBLE_EQ(p.choice.predicted_us, 12);
}

TEST(Plan, AcrossNodesHierarchicalUnlessTheTunerPrefersAFlatAllreduce) {
  PlanFacts f;
  f.gpu = true;
  f.bytes = 64 << 20;
  f.hier_possible = true;
  CountingQuestions q;
  q.fabric.algo = Algo::kHier;
  EXPECT_EQ(choose_plan(f, q).path, Path::kHierarchical);
  EXPECT_EQ(q.fabric_asked, 1);
  EXPECT_EQ(q.hier_asked, 1);

  q.fabric.algo = Algo::kRing;  // the ring's channels cross from every GPU
  Plan p = choose_plan(f, q);
  EXPECT_EQ(p.path, Path::kFabric);
  EXPECT_EQ(p.choice.algo, Algo::kRing);
  EXPECT_EQ(q.fabric_asked, 2);  // once per call, not again for the fabric schedule
  EXPECT_EQ(q.hier_asked, 1);    // the sub-communicators are not made for a flat call

  f.kind = CollKind::kAllgather;  // no flat rival keeps NVLink inside the node
  EXPECT_EQ(choose_plan(f, q).path, Path::kHierarchical);
  EXPECT_EQ(q.fabric_asked, 2);

  q.hier_usable = false;  // a rank could not make them: the fabric
  p = choose_plan(f, q);
  EXPECT_EQ(p.path, Path::kFabric);
  EXPECT_EQ(q.fabric_asked, 3);
}

TEST(Plan, GpuCallsWithoutIpcOrNodesRunTheFabric) {
  PlanFacts f;
  f.gpu = true;
  f.bytes = 1 << 20;
  CountingQuestions q;
  const Plan p = choose_plan(f, q);
  EXPECT_EQ(p.path, Path::kFabric);
  EXPECT_FALSE(p.advances_ll_sequence);
  EXPECT_FALSE(p.watch_ll_peers);
  EXPECT_EQ(q.fabric_asked, 1);
  EXPECT_EQ(q.hier_asked, 0);
}

}  // namespace
}  // namespace efacoll

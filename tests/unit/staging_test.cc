// The staging transform, checked twice: structurally (network ops touch only the stage, slots
// are never reused early) and by running staged ring allreduces over the loopback transport with
// host memory standing in for the GPU buffers, against the reference.
#include "core/staging.h"

#include <gtest/gtest.h>

#include "coll/builders.h"
#include "core/executor.h"
#include "reference.h"
#include "schedule_runner.h"

namespace efacoll {
namespace {

Schedule staged_allreduce(int rank, int n, size_t count, bool inplace, const StagePlan& plan,
                          size_t chunk) {
  RingArgs a;
  a.rank = rank;
  a.nranks = n;
  a.elem_size = 4;
  a.block_counts = even_blocks(count, n);
  a.inplace = inplace;
  a.chunk_bytes = chunk;
  Schedule s;
  EXPECT_TRUE(build_ring_allreduce(a, &s).is_ok());
  GpuBuffers all{true, true, true};
  return stage_network_ops(s, all, plan);
}

TEST(Staging, NetworkOpsUseOnlyStageSlotsAndCopiesBracketThem) {
  StagePlan plan;
  plan.slot_bytes = 16;
  plan.send_slots = plan.recv_slots = 2;
  Schedule s = staged_allreduce(1, 3, 100, false, plan, 16);
  size_t copies = 0, net = 0;
  for (size_t i = 0; i < s.ops.size(); ++i) {
    const Op& op = s.ops[i];
    if (op.kind == OpKind::kSend) {
      ++net;
      EXPECT_EQ(op.src.buf, BufId::kStage);
      EXPECT_LT(op.src.offset, plan.slot_bytes * plan.send_slots);
    } else if (op.kind == OpKind::kRecv) {
      ++net;
      EXPECT_EQ(op.dst.buf, BufId::kStage);
      EXPECT_GE(op.dst.offset, plan.slot_bytes * plan.send_slots);
      EXPECT_LT(op.dst.offset + op.bytes, plan.total_bytes() + 1);
    } else if (op.kind == OpKind::kCopy) {
      ++copies;
    }
  }
  EXPECT_EQ(copies, net) << "one copy per staged message";
}

TEST(Staging, SlotsAreReusedOnlyAfterTheirPreviousUserFinished) {
  StagePlan plan;
  plan.slot_bytes = 8;
  plan.send_slots = plan.recv_slots = 2;
  Schedule s = staged_allreduce(0, 4, 64, true, plan, 8);
  // Reachability from every op, by a DFS per op (small schedule).
  const size_t n = s.ops.size();
  auto reaches = [&](uint32_t from, uint32_t to) {
    std::vector<uint32_t> stack{from};
    std::vector<bool> seen(n, false);
    while (!stack.empty()) {
      uint32_t x = stack.back();
      stack.pop_back();
      if (x == to) return true;
      if (seen[x]) continue;
      seen[x] = true;
      for (uint32_t y : s.successors[x]) stack.push_back(y);
    }
    return false;
  };
  // Any two ops on the same stage bytes, one of them writing, are ordered.
  auto stage_range = [](const Op& op, bool* write) -> std::pair<size_t, size_t> {
    const BufRef* r = nullptr;
    *write = false;
    if (op.kind == OpKind::kRecv || (op.kind == OpKind::kCopy && op.dst.buf == BufId::kStage)) {
      r = &op.dst;
      *write = true;
    } else if (op.kind == OpKind::kSend ||
               (op.kind == OpKind::kCopy && op.src.buf == BufId::kStage)) {
      r = &op.src;
    }
    if (!r || r->buf != BufId::kStage) return {0, 0};
    return {r->offset, r->offset + op.bytes};
  };
  for (uint32_t i = 0; i < n; ++i) {
    bool wi;
    auto ri = stage_range(s.ops[i], &wi);
    if (ri.first == ri.second) continue;
    for (uint32_t j = i + 1; j < n; ++j) {
      bool wj;
      auto rj = stage_range(s.ops[j], &wj);
      if (rj.first == rj.second || !(wi || wj)) continue;
      if (ri.first < rj.second && rj.first < ri.second) {
        ASSERT_TRUE(reaches(i, j) || reaches(j, i)) << "ops " << i << " and " << j << "\n"
                                                    << s.describe();
      }
    }
  }
}

// A staged allreduce on n threads over loopback; "GPU" buffers are host memory here.
std::vector<std::string> run_staged(int n, size_t count, bool inplace, int slots) {
  StagePlan plan;
  plan.send_slots = plan.recv_slots = slots;
  plan.slot_bytes = 12;
  testing::ScheduleRun run;
  run.nranks = n;
  run.count = count;
  run.inplace = inplace;
  run.all_gpu = true;
  run.stage_bytes = plan.total_bytes();
  run.build = [&](int rank) {
    return staged_allreduce(rank, n, count, inplace, plan, plan.slot_bytes);
  };
  return testing::run_allreduce_schedules(run);
}

TEST(Staging, StagedAllreduceIsExact) {
  for (int n : {1, 2, 3, 5}) {
    for (size_t count : {size_t(0), size_t(1), size_t(37), size_t(500)}) {
      for (bool inplace : {false, true}) {
        for (int slots : {1, 2, 8}) {
          auto failures = run_staged(n, count, inplace, slots);
          for (int r = 0; r < n; ++r) {
            EXPECT_EQ(failures[r], "") << "n=" << n << " count=" << count << " inplace=" << inplace
                                       << " slots=" << slots << " rank " << r;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace efacoll

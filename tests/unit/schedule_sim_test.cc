// Every builder's schedules, all ranks at once, run in simulated time with rendezvous semantics
// (a send moves only once its receive is posted, as with EFA's one-sided protocol): they must
// all complete. And the simulated time against the analytic model the tuner uses.
#include "tune/schedule_sim.h"

#include <gtest/gtest.h>

#include <functional>

#include "coll/builders.h"
#include "coll/channels.h"
#include "coll/hier_allreduce.h"
#include "tune/cost_model.h"

namespace efacoll {
namespace {

using Builder = std::function<Status(const RingArgs&, Schedule*)>;

struct Named {
  const char* name;
  CollKind kind;
  Builder build;
};

// A builder on several channels, rings rotated across declared nodes of 2 (as the engine does).
Builder on_channels(CollKind kind, Builder one, int channels, bool ring) {
  return [=](const RingArgs& a, Schedule* s) {
    ChannelArgs ca;
    ca.kind = kind;
    ca.channels = channels_apply(kind, ring, a.inplace) ? channels : 1;
    ca.ranks_per_node = 2;
    ca.rotate_ring = ring;
    return build_channels(ca, a, one, s);
  };
}

const std::vector<Named>& builders() {
  static const std::vector<Named> all = {
      {"ring allreduce x3 channels", CollKind::kAllreduce,
       on_channels(CollKind::kAllreduce, build_ring_allreduce, 3, true)},
      {"tree allreduce x2 channels", CollKind::kAllreduce,
       on_channels(CollKind::kAllreduce, build_tree_allreduce, 2, false)},
      {"ring allgather x4 channels", CollKind::kAllgather,
       on_channels(CollKind::kAllgather, build_ring_allgather, 4, true)},
      {"ring reduce_scatter x3 channels", CollKind::kReduceScatter,
       on_channels(CollKind::kReduceScatter, build_ring_reduce_scatter, 3, true)},
      {"ring allreduce", CollKind::kAllreduce, build_ring_allreduce},
      {"tree allreduce", CollKind::kAllreduce, build_tree_allreduce},
      {"rd allreduce", CollKind::kAllreduce, build_rd_allreduce},
      {"ring allgather", CollKind::kAllgather, build_ring_allgather},
      {"rd allgather", CollKind::kAllgather, build_rd_allgather},
      {"ring reduce_scatter", CollKind::kReduceScatter, build_ring_reduce_scatter},
      {"rh reduce_scatter", CollKind::kReduceScatter, build_rh_reduce_scatter},
      {"hier allreduce (nodes of 2)", CollKind::kAllreduce,
       [](const RingArgs& a, Schedule* s) {
         HierArgs h;
         h.rank = a.rank;
         h.nranks = a.nranks;
         h.ranks_per_node = 2;
         for (size_t c : a.block_counts) h.count += c;
         h.elem_size = a.elem_size;
         h.inplace = a.inplace;
         h.chunk_bytes = a.chunk_bytes;
         return build_hier_allreduce(h, s);
       }},
  };
  return all;
}

std::vector<Schedule> schedules(const Named& b, int n, size_t count, bool inplace, size_t chunk) {
  std::vector<Schedule> out(n);
  for (int r = 0; r < n; ++r) {
    RingArgs a;
    a.rank = r;
    a.nranks = n;
    a.elem_size = 4;
    a.inplace = inplace;
    a.chunk_bytes = chunk;
    a.block_counts =
        b.kind == CollKind::kAllgather ? std::vector<size_t>(n, count) : even_blocks(count, n);
    EXPECT_TRUE(b.build(a, &out[r]).is_ok()) << b.name << " n=" << n;
  }
  return out;
}

TEST(ScheduleSimulation, EveryBuilderCompletesUnderRendezvous) {
  CostModel m;
  ASSERT_TRUE(platform_model("local", &m).is_ok());
  for (const Named& b : builders()) {
    for (int n : {1, 2, 3, 4, 5, 6, 7, 8, 16}) {
      if (std::string(b.name).find("hier") != std::string::npos && (n % 2 || n < 4)) continue;
      for (size_t count : {size_t(0), size_t(1), size_t(37), size_t(1000)}) {
        for (bool inplace : {false, true}) {
          SimResult res;
          Status st = simulate_schedules(schedules(b, n, count, inplace, 256), m.intra, m, &res);
          EXPECT_TRUE(st.is_ok()) << b.name << " n=" << n << " count=" << count
                                  << (inplace ? " in place: " : ": ") << st.message();
        }
      }
    }
  }
}

// The analytic model against the schedules themselves, 8 ranks, 1 MiB and 64 MiB: the same
// order of magnitude (the simulation knows every dependency, the model only step counts).
TEST(ScheduleSimulation, ModelAndSchedulesAgreeWithinAFactorOfTwo) {
  CostModel m;
  ASSERT_TRUE(platform_model("local", &m).is_ok());
  for (size_t bytes : {size_t(1) << 20, size_t(64) << 20}) {
    for (const Named& b : builders()) {
      if (std::string(b.name).find("hier") != std::string::npos ||
          std::string(b.name).find("channels") != std::string::npos)
        continue;
      const Algo algo = std::string(b.name).find("ring") == 0   ? Algo::kRing
                        : std::string(b.name).find("tree") == 0 ? Algo::kTree
                                                                : Algo::kRecursive;
      CostInputs in;
      in.kind = b.kind;
      in.bytes = bytes;
      in.nranks = 8;
      const size_t chunk = algo == Algo::kTree ? tree_chunk_bytes(bytes, 1 << 19) : 1 << 19;
      const size_t count = (b.kind == CollKind::kAllgather ? bytes / 8 : bytes) / 4;
      SimResult res;
      ASSERT_TRUE(
          simulate_schedules(schedules(b, 8, count, false, chunk), m.intra, m, &res).is_ok());
      const double model = predict_us(m, algo, in);
      EXPECT_GT(model, res.finish_us / 2)
          << b.name << " " << bytes << " B: simulated " << res.finish_us << " us, model " << model;
      EXPECT_LT(model, res.finish_us * 2)
          << b.name << " " << bytes << " B: simulated " << res.finish_us << " us, model " << model;
    }
  }
}

// The tuner's step counts (latency_steps: its tie rule, and the model's latency term) against
// the schedules themselves: with every cost but a message's latency set to nothing, a call of a
// few bytes takes one latency per step that waits for a peer, at powers of two and between them.
TEST(ScheduleSimulation, LatencyStepsAreTheSchedulesOwn) {
  CostModel m;
  m.intra = {1.0, 1e9};
  m.per_message_us = 0;
  m.reduce_gbps = 1e9;
  for (const Named& b : builders()) {
    const std::string name = b.name;
    if (name.find("hier") != std::string::npos || name.find("channels") != std::string::npos)
      continue;
    const Algo algo = name.find("ring") == 0   ? Algo::kRing
                      : name.find("tree") == 0 ? Algo::kTree
                                               : Algo::kRecursive;
    for (int n : {2, 3, 4, 5, 6, 7, 8, 12, 13, 16}) {
      SimResult res;
      ASSERT_TRUE(simulate_schedules(schedules(b, n, n, false, 256), m.intra, m, &res).is_ok());
      EXPECT_NEAR(res.finish_us, latency_steps(algo, b.kind, n), 0.01) << name << " n=" << n;
    }
  }
}

}  // namespace
}  // namespace efacoll

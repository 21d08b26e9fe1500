// Every builder's schedules, all ranks at once, run in simulated time with rendezvous semantics
// (a send moves only once its receive is posted, as with EFA's one-sided protocol): they must
// all complete. And the simulated time against the analytic model the tuner uses.
#include "tune/schedule_sim.h"

#include <gtest/gtest.h>

#include <functional>

#include "coll/registry.h"
#include "tune/cost_model.h"

namespace efacoll {
namespace {

// A registry builder (coll/registry.h) on `channels` channels, rings rotated across declared
// nodes of 2 as the engine composes a call; the hierarchical one on nodes of 2.
struct Named {
  const ScheduleBuilder* builder;
  int channels = 1;
  std::string name() const {
    return std::string(builder->name) + " " + coll_name(builder->kind) +
           (channels > 1 ? " x" + std::to_string(channels) + " channels" : "");
  }
  Status build(const RingArgs& a, Schedule* s) const {
    const int per_node = builder->needs_nodes || channels > 1 ? 2 : 0;
    if (channels == 1) return builder->build(a, per_node, s);
    RingArgs args = a;
    return build_call_schedule(*builder, args, per_node, channels, s);
  }
};

// Every builder on one channel, and those that split on a few.
const std::vector<Named>& builders() {
  static const std::vector<Named> all = [] {
    std::vector<Named> v;
    for (const ScheduleBuilder& b : schedule_builders()) {
      v.push_back({&b, 1});
      if (builder_takes_channels(b, false))
        v.push_back({&b, b.kind == CollKind::kAllgather ? 4 : 3});
    }
    return v;
  }();
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
    a.block_counts = b.builder->kind == CollKind::kAllgather ? std::vector<size_t>(n, count)
                                                             : even_blocks(count, n);
    EXPECT_TRUE(b.build(a, &out[r]).is_ok()) << b.name() << " n=" << n;
  }
  return out;
}

TEST(ScheduleSimulation, EveryBuilderCompletesUnderRendezvous) {
  CostModel m;
  ASSERT_TRUE(platform_model("local", &m).is_ok());
  for (const Named& b : builders()) {
    for (int n : {1, 2, 3, 4, 5, 6, 7, 8, 16}) {
      if (b.builder->needs_nodes && (n % 2 || n < 4)) continue;
      for (size_t count : {size_t(0), size_t(1), size_t(37), size_t(1000)}) {
        for (bool inplace : {false, true}) {
          SimResult res;
          Status st = simulate_schedules(schedules(b, n, count, inplace, 256), m.intra, m, &res);
          EXPECT_TRUE(st.is_ok()) << b.name() << " n=" << n << " count=" << count
                                  << (inplace ? " in place: " : ": ") << st.message();
        }
      }
    }
  }
}

// The analytic model against the schedules themselves, 8 ranks, 1 MiB and 64 MiB: within 1.6x
// (the simulation knows every dependency, the model only step counts; the tree's pipeline fill
// is where they differ most, the model 0.64 of the simulation at 64 MiB).
TEST(ScheduleSimulation, ModelAndSchedulesAgreeWithinOnePointSix) {
  CostModel m;
  ASSERT_TRUE(platform_model("local", &m).is_ok());
  for (size_t bytes : {size_t(1) << 20, size_t(64) << 20}) {
    for (const Named& b : builders()) {
      if (b.builder->needs_nodes || b.channels > 1) continue;
      const Algo algo = b.builder->algo;
      CostInputs in;
      in.kind = b.builder->kind;
      in.bytes = bytes;
      in.nranks = 8;
      const size_t chunk = builder_chunk(*b.builder, bytes, 1 << 19);
      const size_t count = (b.builder->kind == CollKind::kAllgather ? bytes / 8 : bytes) / 4;
      SimResult res;
      ASSERT_TRUE(
          simulate_schedules(schedules(b, 8, count, false, chunk), m.intra, m, &res).is_ok());
      const double model = predict_us(m, algo, in);
      EXPECT_GT(model, res.finish_us / 1.6) << b.name() << " " << bytes << " B: simulated "
                                            << res.finish_us << " us, model " << model;
      EXPECT_LT(model, res.finish_us * 1.6) << b.name() << " " << bytes << " B: simulated "
                                            << res.finish_us << " us, model " << model;
    }
  }
}

// What the tuner acts on: where the simulation finds one algorithm clearly faster than another
// for the same call (by more than 25 %), the model orders them the same way. A model that swaps
// the ring and the tree (or a recursive algorithm) at a size the tuner weighs fails here.
// One disagreement is known and kept in view: at 64 KiB the simulation's tree beats the ring and
// recursive doubling, the model's does not. The simulation posts a rank's messages in parallel
// (per_message_us as latency) where the model counts them one after another, and the tree posts
// 3 messages per 4 KiB piece; measured on tcp (docs/model.md) the tree lost where it was
// predicted ahead, so the model's order stands. The test fails once that disagreement is gone
// (the list must stay true).
TEST(ScheduleSimulation, ModelOrdersAlgorithmsAsTheSchedulesDo) {
  CostModel m;
  ASSERT_TRUE(platform_model("local", &m).is_ok());
  auto known_disagreement = [](CollKind kind, size_t bytes, const std::string& faster) {
    return kind == CollKind::kAllreduce && bytes == (size_t(64) << 10) &&
           faster.find("tree") != std::string::npos;
  };
  int compared = 0, known = 0;
  for (CollKind kind : {CollKind::kAllreduce, CollKind::kAllgather, CollKind::kReduceScatter}) {
    for (int n : {4, 5, 8}) {
      for (size_t bytes : {size_t(4) << 10, size_t(64) << 10, size_t(1) << 20, size_t(16) << 20}) {
        struct Timed {
          std::string name;
          double simulated, model;
        };
        std::vector<Timed> timed;
        for (const Named& b : builders()) {
          if (b.builder->kind != kind || b.builder->needs_nodes || b.channels > 1) continue;
          CostInputs in;
          in.kind = kind;
          in.bytes = bytes;
          in.nranks = n;
          const size_t chunk = builder_chunk(*b.builder, bytes, 1 << 19);
          const size_t count = (kind == CollKind::kAllgather ? bytes / n : bytes) / 4;
          SimResult res;
          ASSERT_TRUE(
              simulate_schedules(schedules(b, n, count, false, chunk), m.intra, m, &res).is_ok());
          timed.push_back({b.name(), res.finish_us, predict_us(m, b.builder->algo, in)});
        }
        for (const Timed& x : timed) {
          for (const Timed& y : timed) {
            if (x.simulated * 1.25 >= y.simulated) continue;  // x not clearly faster than y
            const std::string what = std::string(coll_name(kind)) + " " + std::to_string(bytes) +
                                     " B on " + std::to_string(n) + " ranks: " + x.name +
                                     " simulated " + std::to_string(x.simulated) + " us against " +
                                     y.name + " " + std::to_string(y.simulated) +
                                     " us, the model " + std::to_string(x.model) + " against " +
                                     std::to_string(y.model);
            if (known_disagreement(kind, bytes, x.name) && x.model >= y.model) {
              ++known;
              continue;
            }
            ++compared;
            EXPECT_LT(x.model, y.model) << what;
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 20);  // the sizes do separate the algorithms
  EXPECT_GT(known, 0) << "the known disagreement is gone: drop it from the list";
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
    const std::string name = b.name();
    if (b.builder->needs_nodes || b.channels > 1) continue;
    const Algo algo = b.builder->algo;
    for (int n : {2, 3, 4, 5, 6, 7, 8, 12, 13, 16}) {
      SimResult res;
      ASSERT_TRUE(simulate_schedules(schedules(b, n, n, false, 256), m.intra, m, &res).is_ok());
      EXPECT_NEAR(res.finish_us, latency_steps(algo, b.builder->kind, n), 0.01)
          << name << " n=" << n;
    }
  }
}

}  // namespace
}  // namespace efacoll

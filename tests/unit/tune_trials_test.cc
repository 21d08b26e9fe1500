// Online trials (EFACOLL_TUNE_TRIALS): the candidates a call shape's first calls measure, the
// order they run in, the choice every rank keeps, and calls that run exact throughout.
#include <gtest/gtest.h>

#include <limits>
#include <mutex>

#include "host_gpu_runtime.h"
#include "thread_ranks.h"
#include "tune/algo.h"
#include "tune/cost_model.h"
#include "tune/trials.h"

namespace efacoll {
namespace testing {
namespace {

TunedChoice choice(Algo a) {
  TunedChoice c;
  c.algo = a;
  return c;
}

TEST(TuneTrials, CandidatesRunInTurnThenTheOneKeptRunsAlone) {
  ShapeTrial t(CollKind::kAllreduce, "allreduce 4096 B on 2 ranks",
               {choice(Algo::kRecursive), choice(Algo::kRing), choice(Algo::kTree)}, 3);
  const std::vector<double> times = {10, 20, 30, 11, 21, 300, 12, 22, 31};
  std::vector<Algo> ran;
  for (double us : times) {
    EXPECT_FALSE(t.measured());
    ran.push_back(t.current().algo);
    t.record(us);
  }
  EXPECT_EQ(ran, (std::vector<Algo>{Algo::kRecursive, Algo::kRing, Algo::kTree, Algo::kRecursive,
                                    Algo::kRing, Algo::kTree, Algo::kRecursive, Algo::kRing,
                                    Algo::kTree}));
  ASSERT_TRUE(t.measured());
  EXPECT_FALSE(t.settled());
  // Medians: the tree's 300 us outlier does not move its 31.
  EXPECT_EQ(t.medians(), (std::vector<double>{11, 21, 31}));
  t.settle(1);
  EXPECT_TRUE(t.settled());
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(t.current().algo, Algo::kRing);
    t.record(1);
  }
  EXPECT_EQ(t.medians(), (std::vector<double>{11, 21, 31})) << "calls after settling not kept";
}

// A sample is the mean of a run of calls of one candidate, and the ranks meet only before a run.
TEST(TuneTrials, ASampleIsTheMeanOfARunOfCalls) {
  ShapeTrial t(CollKind::kAllgather, "allgather", {choice(Algo::kRing), choice(Algo::kRecursive)},
               2, 3);
  const std::vector<double> times = {10, 20, 30, 1, 1, 1, 11, 21, 32, 2, 2, 2};
  std::vector<bool> starts;
  std::vector<Algo> ran;
  for (double us : times) {
    starts.push_back(t.starts_sample());
    ran.push_back(t.current().algo);
    t.record(us);
  }
  EXPECT_EQ(starts, (std::vector<bool>{true, false, false, true, false, false, true, false, false,
                                       true, false, false}));
  EXPECT_EQ(ran,
            (std::vector<Algo>{Algo::kRing, Algo::kRing, Algo::kRing, Algo::kRecursive,
                               Algo::kRecursive, Algo::kRecursive, Algo::kRing, Algo::kRing,
                               Algo::kRing, Algo::kRecursive, Algo::kRecursive, Algo::kRecursive}));
  ASSERT_TRUE(t.measured());
  // Samples: ring 20 and 21.33, doubling 1 and 2; the median of two is the upper.
  EXPECT_NEAR(t.medians()[0], 64.0 / 3, 1e-9);
  EXPECT_EQ(t.medians()[1], 2);
  EXPECT_EQ(trial_calls_per_sample(4096), 8u);
  EXPECT_EQ(trial_calls_per_sample(size_t(1) << 20), 3u);
  EXPECT_EQ(trial_calls_per_sample(size_t(64) << 20), 1u);
}

// A collective ends with its slowest rank: rank 1 ran the first candidate slowly, so the second,
// slower on rank 0 but steady on both, is kept; the model's pick (the first) gives way only to a
// lead of more than 5 %.
TEST(TuneTrials, TheSlowestRanksFastestCandidateIsKept) {
  const std::vector<double> all = {10, 15, 40,   // rank 0
                                   30, 16, 41};  // rank 1
  const std::vector<double> slowest = slowest_ranks(all, 3);
  EXPECT_EQ(slowest, (std::vector<double>{30, 16, 41}));
  EXPECT_EQ(trial_winner(slowest), 1u);
  EXPECT_EQ(trial_winner({20, 20, 25}), 0u) << "exact ties go to the model's pick";
  EXPECT_EQ(trial_winner({100, 97, 96}), 0u) << "a lead under 5 % is noise";
  EXPECT_EQ(trial_winner({100, 96, 94}), 2u);
}

TEST(TuneTrials, AFailedCallCountsAsNeverFinishing) {
  const double never = std::numeric_limits<double>::infinity();
  ShapeTrial t(CollKind::kAllgather, "allgather", {choice(Algo::kRing), choice(Algo::kRecursive)},
               1);
  t.record(never);
  t.record(50);
  ASSERT_TRUE(t.measured());
  EXPECT_EQ(trial_winner(slowest_ranks(t.medians(), 2)), 1u);
}

TEST(TuneTrials, NearCandidatesAreTheModelsRankingWithinTheMargin) {
  CostModel m;
  ASSERT_TRUE(platform_model("local", &m).is_ok());
  AlgoInputs in;
  in.kind = CollKind::kAllreduce;
  in.bytes = size_t(64) << 10;
  in.nranks = 4;
  auto forced_us = [&](const char* algo) {
    AlgoOverrides f;
    EXPECT_TRUE(parse_algo_overrides(algo, &f).is_ok());
    return tune_algo(m, in, f).predicted_us;
  };
  const double rd = forced_us("rd");
  // The ring 1.2x and the tree 1.6x doubling's time.
  m.corrections = {
      {CollKind::kAllreduce, Algo::kRing, double(in.bytes), 1.2 * rd / forced_us("ring")},
      {CollKind::kAllreduce, Algo::kTree, double(in.bytes), 1.6 * rd / forced_us("tree")}};
  const std::vector<TunedChoice> near = near_candidates(m, in, kTrialMargin);
  ASSERT_EQ(near.size(), 2u);
  EXPECT_EQ(near[0].algo, tune_algo(m, in, AlgoOverrides()).algo) << "the model's pick first";
  EXPECT_EQ(near[0].algo, Algo::kRecursive);
  EXPECT_EQ(near[1].algo, Algo::kRing);
  EXPECT_NEAR(near[1].predicted_us, 1.2 * rd, 1e-6 * rd);
  EXPECT_EQ(near_candidates(m, in, 0.1).size(), 1u);
  EXPECT_EQ(near_candidates(m, in, 0.7).size(), 3u);
}

TEST(TuneTrials, TheSettingsGrammar) {
  int n = -1;
  ASSERT_TRUE(parse_tune_trials("auto", true, &n).is_ok());
  EXPECT_EQ(n, 7) << "calibrated links: trials on";
  ASSERT_TRUE(parse_tune_trials("auto", false, &n).is_ok());
  EXPECT_EQ(n, 0) << "platform defaults: the model's pick stands";
  ASSERT_TRUE(parse_tune_trials("3", false, &n).is_ok());
  EXPECT_EQ(n, 3);
  for (const char* bad : {"", "-1", "1001", "3x", "many"}) {
    Status st = parse_tune_trials(bad, true, &n);
    EXPECT_EQ(st.code(), Code::kInvalid) << bad;
    EXPECT_NE(st.message().find("EFACOLL_TUNE_TRIALS=" + std::string(bad) + ": expected"),
              std::string::npos)
        << st.message();
  }
}

struct CallSeen {
  Algo algo;
  bool on_trial;
};

// The smallest allreduce (bytes, from 64 B doubling) whose near candidates number more than one,
// and their number; 0 where there is none up to 4 MiB.
size_t first_near_allreduce(const CostModel& model, int nranks, size_t* ncand) {
  AlgoInputs in;
  in.kind = CollKind::kAllreduce;
  in.nranks = nranks;
  for (size_t bytes = 64; bytes <= (size_t(4) << 20); bytes *= 2) {
    in.bytes = bytes;
    *ncand = near_candidates(model, in, kTrialMargin).size();
    if (*ncand > 1) return bytes;
  }
  return 0;
}

// Ranks with the local model and `each` trial samples a candidate; the tuner picks chunks too.
RankSetup trial_setup(int each) {
  RankSetup setup;
  EXPECT_TRUE(platform_model("local", &setup.config.model).is_ok());
  setup.config.tune_trials = each;
  setup.config.chunk_forced = false;
  setup.config.timeout = std::chrono::milliseconds(20000);  // a deadlock fails, not hangs
  return setup;
}

// Every rank runs the same candidates, a sample's calls each in turn, and keeps the same one,
// and every result is exact; a shape the model does not find close is never tried, and a forced
// algorithm never.
TEST(TuneTrials, EveryRankRunsTheSameCandidatesAndKeepsTheSameOne) {
  constexpr int kRanks = 4, kEach = 3;
  RankSetup setup = trial_setup(kEach);
  AlgoInputs in;
  in.kind = CollKind::kAllreduce;
  in.nranks = kRanks;
  size_t ncand = 0, far_bytes = 0;
  const size_t near_bytes = first_near_allreduce(setup.config.model, kRanks, &ncand);
  for (size_t bytes = 64; bytes <= (size_t(4) << 20) && !far_bytes; bytes *= 2) {
    in.bytes = bytes;
    if (near_candidates(setup.config.model, in, kTrialMargin).size() == 1) far_bytes = bytes;
  }
  ASSERT_NE(near_bytes, 0u) << "the local model has near candidates somewhere";
  ASSERT_NE(far_bytes, 0u);
  const size_t per_sample = trial_calls_per_sample(near_bytes);
  const size_t trial_calls = ncand * kEach * per_sample, calls = trial_calls + 6;
  std::mutex mu;
  std::vector<std::vector<CallSeen>> seen(kRanks);
  auto failures = run_ranks(kRanks, setup, [&](RankContext& c) {
    std::vector<CallSeen> mine;
    auto one_call = [&](size_t bytes) {
      const std::string wrong =
          check_allreduce_in_place(c.comm, c.rank, kRanks, bytes / sizeof(int32_t));
      if (!wrong.empty()) return c.failures->push_back(std::to_string(bytes) + " B: " + wrong);
      mine.push_back({c.engine.last_choice().algo, c.engine.last_choice().on_trial});
    };
    for (size_t i = 0; i < calls; ++i) one_call(near_bytes);
    for (int i = 0; i < 3; ++i) one_call(far_bytes);
    if (!c.engine.set_algo("ring").is_ok()) c.failures->push_back("set_algo");
    for (int i = 0; i < 2; ++i) one_call(near_bytes * 2);
    std::lock_guard<std::mutex> lock(mu);
    seen[c.rank] = mine;
  });
  for (const auto& f : failures) ADD_FAILURE() << f;
  ASSERT_TRUE(failures.empty());
  in.bytes = near_bytes;
  const std::vector<TunedChoice> cands = near_candidates(setup.config.model, in, kTrialMargin);
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(seen[r].size(), calls + 5);
    for (size_t i = 0; i < calls; ++i) {
      EXPECT_EQ(seen[r][i].on_trial, i < trial_calls) << "rank " << r << " call " << i;
      if (i < trial_calls) {
        EXPECT_EQ(seen[r][i].algo, cands[(i / per_sample) % ncand].algo)
            << "rank " << r << " call " << i;
      }
      EXPECT_EQ(seen[r][i].algo, seen[0][i].algo) << "rank " << r << " call " << i;
    }
    for (size_t i = trial_calls + 1; i < calls; ++i) {
      EXPECT_EQ(seen[r][i].algo, seen[r][trial_calls].algo) << "the kept choice stays";
    }
    for (size_t i = calls; i < seen[r].size(); ++i) {
      EXPECT_FALSE(seen[r][i].on_trial) << "rank " << r << " call " << i;
      if (i >= calls + 3) {
        EXPECT_EQ(seen[r][i].algo, Algo::kRing) << "forced";
      }
    }
  }
}

// A shape settled on host buffers is tried afresh on GPU buffers, which the fabric stages or
// copies through host memory: the algorithms' times differ, so one trial cannot stand for both.
// Every rank runs the same candidate at every call, and every result is exact.
TEST(TuneTrials, GpuBufferCallsAreTriedApartFromHostBufferCalls) {
  constexpr int kRanks = 4, kEach = 2;
  RankSetup setup = trial_setup(kEach);
  setup.config.ipc_chunk_bytes = 0;  // no CUDA IPC: GPU calls go through the fabric too
  auto counts = std::make_shared<HostGpuRuntime::Counts>();
  setup.gpu = [counts](int) { return std::make_unique<HostGpuRuntime>(counts); };
  size_t ncand = 0;
  const size_t bytes = first_near_allreduce(setup.config.model, kRanks, &ncand);
  ASSERT_NE(bytes, 0u) << "the local model has near candidates somewhere";
  const size_t trial_calls = ncand * kEach * trial_calls_per_sample(bytes);
  // Host buffers, then GPU buffers, each tried; then host buffers again, settled before.
  const std::pair<MemKind, bool> phases[] = {
      {MemKind::kHost, true}, {MemKind::kDevice, true}, {MemKind::kHost, false}};
  // GPU data through pinned host copies (the default limit), then through the staged pipeline.
  for (size_t host_path_max : {setup.config.gpu_host_path_max, size_t(0)}) {
    setup.config.gpu_host_path_max = host_path_max;
    const std::string way = host_path_max ? "host copies" : "staged";
    std::mutex mu;
    std::vector<std::vector<Algo>> ran(kRanks);
    const auto failures = run_ranks(kRanks, setup, [&](RankContext& c) {
      std::vector<Algo> mine;
      for (size_t phase = 0; phase < 3; ++phase) {
        const auto& [memory, tried] = phases[phase];
        // The trials' calls and one after them.
        for (size_t call = 0; call <= trial_calls; ++call) {
          const std::string wrong =
              check_allreduce(c.comm, c.rank, kRanks, bytes / sizeof(int32_t), memory, memory);
          const bool on_trial = c.engine.last_choice().on_trial;
          mine.push_back(c.engine.last_choice().algo);
          if (!wrong.empty() || on_trial != (tried && call < trial_calls)) {
            c.failures->push_back(way + ", phase " + std::to_string(phase) + " (" +
                                  (memory == MemKind::kHost ? "host" : "GPU") + "), call " +
                                  std::to_string(call) + (on_trial ? "" : " not") +
                                  " on trial: " + wrong);
          }
        }
      }
      std::lock_guard<std::mutex> lock(mu);
      ran[c.rank] = mine;
    });
    for (const auto& f : failures) ADD_FAILURE() << f;
    for (int r = 1; r < kRanks; ++r) EXPECT_EQ(ran[r], ran[0]) << way << ": rank " << r;
  }
}

}  // namespace
}  // namespace testing
}  // namespace efacoll

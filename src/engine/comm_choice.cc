// A call's algorithm, chunk size and channel count: forced, the size rule (EFACOLL_TUNE=off),
// the cost model's pick (remembered per call shape: weighing every candidate costs
// microseconds), or, where the model's candidates are near each other and online trials are on,
// each of them in turn over the shape's first calls, then the one every rank measured fastest.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>

#include "common/log.h"
#include "engine/comm_core.h"
#include "engine/engine_core.h"
#include "tune/algo.h"
#include "tune/trials.h"

namespace efacoll {
namespace {

constexpr size_t kMaxShapes = 4096;

static_assert(static_cast<int>(CollKind::kCount) <= 4, "the kind has 2 bits of the key");
static_assert(static_cast<int>(Algo::kIpc) < 8, "the forced algorithm has 3 bits of the key");

// The forced algorithm is part of the key: efacoll_set_algo may change it between calls.
uint64_t shape_key(const AlgoInputs& in, Algo forced, bool gpu) {
  return (static_cast<uint64_t>(in.bytes) << 7) | (gpu ? 1u << 6 : 0u) |
         (static_cast<uint64_t>(forced) << 3) | (static_cast<uint64_t>(in.kind) << 1) |
         (in.inplace ? 1 : 0);
}

// "allreduce 32768 B on 4 ranks: trials (7 runs of 8 calls each, the slowest rank's median): ring
// 896.8 us (predicted 931.5), ...; keeps ring (the model's pick: recursive doubling)"
std::string trial_table(const ShapeTrial& t, const std::vector<double>& slowest) {
  std::string text = t.shape() + ": trials (" + std::to_string(t.samples_each()) + " runs of " +
                     std::to_string(t.calls_per_sample()) +
                     " calls each, the slowest rank's median):";
  for (size_t i = 0; i < t.candidates().size(); ++i) {
    const TunedChoice& c = t.candidates()[i];
    char part[160];
    std::snprintf(part, sizeof(part), "%s %s %.1f us (predicted %.1f)", i ? "," : "",
                  algo_name(c.algo, t.kind()), slowest[i], c.predicted_us);
    text += part;
  }
  text += std::string("; keeps ") + algo_name(t.current().algo, t.kind());
  if (t.kept() != 0)
    text += std::string(" (the model's pick: ") + algo_name(t.candidates()[0].algo, t.kind()) + ")";
  return text;
}

std::string shape_text(const AlgoInputs& in, bool gpu) {
  return std::string(coll_name(in.kind)) + " " + std::to_string(in.bytes) + " B on " +
         std::to_string(in.nranks) + " ranks" + (gpu ? ", GPU buffers" : "");
}

}  // namespace

TunedChoice CommCore::choose_call(const AlgoInputs& in) {
  const EngineConfig& config = engine_->config();
  if (!config.tune) {
    TunedChoice c;
    c.algo = choose_algo(in, config.algo);
    c.chunk_bytes = in.chunk_bytes;
    c.channels = algo_takes_channels(c.algo, in.kind, in.inplace) ? std::max(1, in.channels) : 1;
    return c;
  }
  const Algo forced = config.algo.for_kind(in.kind);
  const uint64_t key = shape_key(in, forced, gpu_call_);
  const bool explain = log_enabled(LogLevel::kTrace, kTune);
  // Only the user's own calls that move data: a hierarchical call's phases and the calibration
  // run on schedules of their own, and each rank must count the same calls.
  const bool trials = config.tune_trials > 0 && user_call_ && forced == Algo::kAuto && in.bytes > 0;
  if (trials) {
    auto it = trials_.find(key);
    if (it != trials_.end()) {
      ShapeTrial& t = *it->second;
      const TunedChoice c = t.settled() ? t.current() : trial_choice(key, t);
      if (explain) {
        EFACOLL_TRACE(kTune, "%s: %s %s", t.shape().c_str(), algo_name(c.algo, in.kind),
                      c.on_trial ? "(on trial)" : "(kept by the trials)");
      }
      return c;
    }
  }
  if (!explain) {
    auto it = tuned_.find(key);
    if (it != tuned_.end()) return it->second;
  }
  TunedChoice c = tune_algo(model_, in, config.algo, explain);
  if (explain) EFACOLL_TRACE(kTune, "%s", c.explanation.c_str());
  if (trials) {
    std::vector<TunedChoice> near = near_candidates(model_, in, kTrialMargin);
    if (near.size() > 1) {
      // Every rank sees the same shapes in the same order, so all forget at the same call.
      if (trials_.size() >= kMaxShapes) trials_.clear();
      auto& t = trials_[key] =
          std::make_unique<ShapeTrial>(in.kind, shape_text(in, gpu_call_), std::move(near),
                                       config.tune_trials, trial_calls_per_sample(in.bytes));
      return trial_choice(key, *t);
    }
  }
  if (tuned_.size() >= kMaxShapes) tuned_.clear();
  return tuned_[key] = c;
}

TunedChoice CommCore::trial_choice(uint64_t key, ShapeTrial& t) {
  TunedChoice c = t.current();
  c.on_trial = true;
  // Hierarchical GPU calls ask twice in one call: the ranks meet once.
  if (trial_call_.running) return c;
  trial_call_.running = true;
  trial_call_.key = key;
  if (t.starts_sample()) {
    const uint8_t mine = 0;
    std::vector<uint8_t> all(size_);
    trial_call_.status = host_allgather(&mine, 1, all.data());
  }
  trial_call_.start = std::chrono::steady_clock::now();
  return c;
}

void CommCore::finish_trial_call(bool call_ok) {
  trial_call_.running = false;
  auto it = trials_.find(trial_call_.key);
  if (it == trials_.end()) return;
  ShapeTrial& t = *it->second;
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() -
                                                              trial_call_.start)
                        .count();
  t.record(call_ok ? us : std::numeric_limits<double>::infinity());
  if (!t.measured() || t.settled()) return;
  const size_t n = t.candidates().size();
  std::vector<double> mine = t.medians(), all(n * size_);
  // A failed call does not wait for the others' numbers (a dead peer would double the time to
  // its error): the model's pick stands. Where the exchange fails, the same.
  Status st = call_ok ? host_allgather(mine.data(), n * sizeof(double), all.data())
                      : Status(Code::kInternal, "the call failed");
  if (!st.is_ok()) {
    t.settle(0);
    EFACOLL_INFO(kTune,
                 "communicator %u, %s: trials ended without every rank's times (%s); "
                 "keeps the model's pick, %s",
                 id_, t.shape().c_str(), st.message().c_str(),
                 algo_name(t.current().algo, t.kind()));
    return;
  }
  const std::vector<double> slowest = slowest_ranks(all, n);
  t.settle(trial_winner(slowest));
  EFACOLL_INFO(kTune, "communicator %u, %s", id_, trial_table(t, slowest).c_str());
}

}  // namespace efacoll

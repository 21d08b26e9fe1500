// Online trials (EFACOLL_TUNE_TRIALS): where the cost model predicts several algorithms for a
// call shape within kTrialMargin of each other, the shape's first calls run them in turn, and
// every rank then keeps the one whose slowest rank's median time was least. The model prices
// links from a short calibration; these calls price the algorithms on the machine as the
// application loads it, where a calibration's 15 repeats could not tell them apart.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "efacoll/algo.h"
#include "efacoll/status.h"
#include "efacoll/types.h"

namespace efacoll {

// Candidates predicted within this fraction of the fastest are tried: near ties, where the
// calibrated model is unsure. Further apart the model was right more often than the trials
// (docs/model.md: 4 ranks on 2 cores, trying within 1.5x, 8-11 of 80 points missed the fastest
// algorithm by over 10 %, the model's own picks 8, within 1.25x 3).
constexpr double kTrialMargin = 0.25;
// A measured lead smaller than this leaves the model's pick in place: within the trials' noise.
constexpr double kTrialSwitchMargin = 0.05;

// Consecutive calls of one candidate that make one sample (their mean): a single call's time
// swings with where the ranks stand when it starts, while the time of a run of calls is what a
// loop of them costs (ranks sharing cores: the order of two algorithms at 4-16 KiB reversed
// between single calls and runs of ten).
size_t trial_calls_per_sample(size_t bytes);

class ShapeTrial {
 public:
  // shape: how logs name the calls ("allreduce 32768 B on 4 ranks").
  ShapeTrial(CollKind kind, std::string shape, std::vector<TunedChoice> candidates,
             int samples_each, size_t calls_per_sample = 1);

  // What the shape's next call runs: the candidates in turn, a sample's calls each (a slow
  // stretch of the machine then falls on all alike), and once settled, the one kept.
  const TunedChoice& current() const;
  // Whether the next call starts a sample (the ranks meet first, to start it together).
  bool starts_sample() const { return !settled() && next_ % calls_per_sample_ == 0; }
  // The time of a call that ran current() (a failed call counts as never finishing).
  void record(double us);
  bool measured() const { return next_ >= candidates_.size() * samples_each_ * calls_per_sample_; }
  bool settled() const { return kept_ < candidates_.size(); }
  // This rank's median sample per candidate, in the candidates' order.
  std::vector<double> medians() const;
  void settle(size_t index) { kept_ = index < candidates_.size() ? index : 0; }
  const std::vector<TunedChoice>& candidates() const { return candidates_; }
  size_t kept() const { return kept_; }
  int samples_each() const { return static_cast<int>(samples_each_); }
  size_t calls_per_sample() const { return calls_per_sample_; }
  CollKind kind() const { return kind_; }
  const std::string& shape() const { return shape_; }

 private:
  CollKind kind_;
  std::string shape_;
  std::vector<TunedChoice> candidates_;
  size_t samples_each_;
  size_t calls_per_sample_;
  std::vector<std::vector<double>> samples_;  // per candidate
  double sample_sum_ = 0;                     // of the sample being taken
  size_t next_ = 0;                           // calls recorded
  size_t kept_;                               // candidates_.size(): not settled
};

// Of every rank's medians (ranks in turn, `ncand` each), the slowest rank's per candidate: a
// collective ends with its slowest rank.
std::vector<double> slowest_ranks(const std::vector<double>& all_medians, size_t ncand);
// The candidate whose slowest rank was fastest, where it beat the model's pick (the first) by
// more than kTrialSwitchMargin; else the model's pick. Every rank computes it from the same
// numbers, so all keep the same.
size_t trial_winner(const std::vector<double>& slowest);

// EFACOLL_TUNE_TRIALS: "auto" (7 where the links were calibrated, else 0) or 0 to 1000.
Status parse_tune_trials(const std::string& text, bool calibrated, int* samples_each);

}  // namespace efacoll

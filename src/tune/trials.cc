#include "tune/trials.h"

#include <algorithm>
#include <cstdlib>
#include <limits>

namespace efacoll {

size_t trial_calls_per_sample(size_t bytes) {
  return bytes <= (size_t(64) << 10) ? 8 : bytes < (size_t(4) << 20) ? 3 : 1;
}

ShapeTrial::ShapeTrial(CollKind kind, std::string shape, std::vector<TunedChoice> candidates,
                       int samples_each, size_t calls_per_sample)
    : kind_(kind),
      shape_(std::move(shape)),
      candidates_(std::move(candidates)),
      samples_each_(static_cast<size_t>(std::max(1, samples_each))),
      calls_per_sample_(std::max<size_t>(1, calls_per_sample)),
      samples_(candidates_.size()),
      kept_(candidates_.size()) {}

const TunedChoice& ShapeTrial::current() const {
  if (settled()) return candidates_[kept_];
  return candidates_[(next_ / calls_per_sample_) % candidates_.size()];
}

void ShapeTrial::record(double us) {
  if (settled() || measured()) return;
  sample_sum_ += us;
  const size_t candidate = (next_ / calls_per_sample_) % candidates_.size();
  if (++next_ % calls_per_sample_ == 0) {
    samples_[candidate].push_back(sample_sum_ / static_cast<double>(calls_per_sample_));
    sample_sum_ = 0;
  }
}

std::vector<double> ShapeTrial::medians() const {
  std::vector<double> out;
  for (std::vector<double> t : samples_) {
    if (t.empty()) {
      out.push_back(std::numeric_limits<double>::infinity());
      continue;
    }
    std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
    out.push_back(t[t.size() / 2]);
  }
  return out;
}

std::vector<double> slowest_ranks(const std::vector<double>& all_medians, size_t ncand) {
  std::vector<double> slowest(ncand, 0);
  for (size_t i = 0; ncand && i < all_medians.size(); ++i)
    slowest[i % ncand] = std::max(slowest[i % ncand], all_medians[i]);
  return slowest;
}

size_t trial_winner(const std::vector<double>& slowest) {
  size_t best = 0;
  for (size_t c = 1; c < slowest.size(); ++c) {
    if (slowest[c] < slowest[best]) best = c;
  }
  return slowest[best] < slowest[0] * (1 - kTrialSwitchMargin) ? best : 0;
}

Status parse_tune_trials(const std::string& text, bool calibrated, int* samples_each) {
  if (text == "auto") {
    *samples_each = calibrated ? 7 : 0;
    return Status::ok();
  }
  char* end = nullptr;
  const long n = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || n < 0 || n > 1000) {
    return Status(Code::kInvalid,
                  "EFACOLL_TUNE_TRIALS=" + text + ": expected auto or 0 (none) to 1000");
  }
  *samples_each = static_cast<int>(n);
  return Status::ok();
}

}  // namespace efacoll

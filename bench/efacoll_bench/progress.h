// The progress line of long runs, on stderr (rank 0 only): nothing for the first ~2 s, then
// "efacoll-bench: size N of M (BYTES B), elapsed S s", rewritten in place on a terminal and at
// most one line every 10 s elsewhere (a log file should not fill up with it).
#ifndef EFACOLL_BENCH_PROGRESS_H
#define EFACOLL_BENCH_PROGRESS_H

#include <chrono>
#include <cstddef>
#include <cstdio>

namespace efacoll_bench {

class Progress {
 public:
  Progress(bool enabled, FILE* out);
  // Size `index` (0-based) of `total` is about to be measured.
  void update(size_t index, size_t total, size_t bytes);
  // Takes the line off a terminal before something else is printed there.
  void clear();

 private:
  using Clock = std::chrono::steady_clock;
  bool enabled_, terminal_;
  FILE* out_;
  Clock::time_point start_, last_line_;
  bool shown_ = false;  // on a terminal: a line is there now
  bool printed_ = false;
};

}  // namespace efacoll_bench

#endif

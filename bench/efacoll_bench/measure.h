// Timing, as nccl-tests and OSU do it for blocking calls: untimed warm-up, then repeats of a
// batch of calls; a batch's time is its mean per call on the slowest rank, and the time reported
// is the median over repeats.
#ifndef EFACOLL_BENCH_MEASURE_H
#define EFACOLL_BENCH_MEASURE_H

#include <functional>
#include <vector>

#include "options.h"

namespace efacoll_bench {

// `call` runs one blocking call. Collective: every rank must call it alike.
double measure_seconds(const Options& o, const std::function<void()>& call);

// Calls per batch for about kAdaptiveTargetSeconds over all repeats, from one call's time.
int adaptive_iterations(double probe_seconds, int repeats);

double median(std::vector<double> v);

}  // namespace efacoll_bench

#endif

#include "measure.h"

#include <mpi.h>

#include <algorithm>

namespace efacoll_bench {
namespace {

constexpr int kMaxIterations = 1000;

// PMPI only: the timing must never measure (or depend on) efacoll itself.
double batch_seconds(const std::function<void()>& call, int iters) {
  PMPI_Barrier(MPI_COMM_WORLD);
  const double start = PMPI_Wtime();
  for (int i = 0; i < iters; ++i) call();
  double mean = (PMPI_Wtime() - start) / iters, slowest = 0;
  PMPI_Allreduce(&mean, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

}  // namespace

int adaptive_iterations(double probe_seconds, int repeats) {
  const double want = kAdaptiveTargetSeconds / repeats / std::max(probe_seconds, 1e-9);
  return static_cast<int>(std::clamp(want, 1.0, double{kMaxIterations}));
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

double measure_seconds(const Options& o, const std::function<void()>& call) {
  for (int i = 0; i < o.warmup; ++i) call();
  // The probe is the slowest rank's: every rank gets the same count.
  const int iters = o.iters > 0 ? o.iters : adaptive_iterations(batch_seconds(call, 1), o.repeats);
  std::vector<double> times;
  for (int r = 0; r < o.repeats; ++r) times.push_back(batch_seconds(call, iters));
  return median(times);
}

}  // namespace efacoll_bench

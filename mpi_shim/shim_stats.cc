// EFACOLL_STATS=1: per collective, calls efacoll ran, calls passed to MPI and why, bytes, time.
#include <cstdio>
#include <map>
#include <string>

#include "mpi_shim/shim.h"

namespace efacoll {
namespace shim {
namespace {

// The engine's counters are atomics: every call counts, and a mutex there would be a thread
// lock on the hot path at every thread level. Calls passed to MPI take the mutex (the reasons).
struct CollStats {
  std::atomic<unsigned long long> engine_calls{0}, engine_bytes{0}, engine_ns{0};
  unsigned long long mpi_calls = 0;
  std::map<std::string, unsigned long long> reasons;
};

std::mutex& stats_mutex() {
  static auto* m = new std::mutex();
  return *m;
}

CollStats& stats(CollKind kind) {
  static auto* all = new CollStats[static_cast<int>(CollKind::kCount)];
  return all[static_cast<int>(kind)];
}

}  // namespace

void stats_engine_call(CollKind kind, size_t bytes, std::chrono::nanoseconds time) {
  CollStats& s = stats(kind);
  s.engine_calls.fetch_add(1, std::memory_order_relaxed);
  s.engine_bytes.fetch_add(bytes, std::memory_order_relaxed);
  s.engine_ns.fetch_add(static_cast<unsigned long long>(time.count()), std::memory_order_relaxed);
}

void stats_mpi_call(CollKind kind, const char* reason) {
  std::lock_guard<std::mutex> lock(stats_mutex());
  CollStats& s = stats(kind);
  s.mpi_calls++;
  s.reasons[reason]++;
}

Counters stats_counters(CollKind kind) {
  std::lock_guard<std::mutex> lock(stats_mutex());
  const CollStats& s = stats(kind);
  Counters c;
  c.engine_calls = s.engine_calls.load(std::memory_order_relaxed);
  c.engine_bytes = s.engine_bytes.load(std::memory_order_relaxed);
  c.mpi_calls = s.mpi_calls;
  return c;
}

void stats_print_if_enabled() {
  State& st = state();
  if (!st.params || !st.params->flag(Param::kStats) || st.world_rank != 0) return;
  std::lock_guard<std::mutex> lock(stats_mutex());
  std::fprintf(stderr,
               "efacoll statistics (rank 0)\n"
               "%-16s %12s %14s %12s %10s  %s\n",
               "collective", "efacoll", "bytes", "time_ms", "to MPI", "reasons passed to MPI");
  for (int k = 0; k < static_cast<int>(CollKind::kCount); ++k) {
    const CollStats& s = stats(static_cast<CollKind>(k));
    std::string reasons;
    for (const auto& r : s.reasons) {
      reasons += (reasons.empty() ? "" : ", ") + r.first + " x" + std::to_string(r.second);
    }
    std::fprintf(stderr, "%-16s %12llu %14llu %12.3f %10llu  %s\n",
                 coll_name(static_cast<CollKind>(k)), s.engine_calls.load(), s.engine_bytes.load(),
                 s.engine_ns.load() / 1e6, s.mpi_calls, reasons.empty() ? "-" : reasons.c_str());
  }
  std::fflush(stderr);
}

}  // namespace shim
}  // namespace efacoll

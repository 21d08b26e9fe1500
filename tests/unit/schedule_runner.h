// Runs one schedule per rank on threads over the loopback transport (below the engine), for
// builders and transforms that the engine does not reach on its own in tests.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "core/schedule.h"
#include "efacoll/types.h"

namespace efacoll {
namespace testing {

struct ScheduleRun {
  int nranks = 1;
  size_t count = 0;  // allreduce elements
  DType type = DType::kInt32;
  ROp op = ROp::kSum;
  bool inplace = false;
  bool all_gpu = false;    // mark every buffer as GPU memory (host memory stands in for it)
  size_t stage_bytes = 0;  // size of the stage buffer the schedule uses
  std::function<Schedule(int rank)> build;
};

// Runs an allreduce schedule on every rank; returns per-rank "" or what went wrong.
std::vector<std::string> run_allreduce_schedules(const ScheduleRun& run);

}  // namespace testing
}  // namespace efacoll

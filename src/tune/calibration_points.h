// The sizes EFACOLL_TUNE=calibrate runs every algorithm at (CommCore::calibrate_algorithms), per
// collective and communicator size: the same list on every rank, so all make the same calls.
#pragma once
#include <cstddef>
#include <vector>

#include "efacoll/types.h"

namespace efacoll {

struct CalibrationPoint {
  size_t count = 0;  // float elements of the whole vector (a multiple of the ranks where the
                     // collective divides it: at least one each)
  size_t bytes = 0;  // count * 4: the call's size as the cost model reads it
  // Latency-bound (asked for at most 1 KiB): the correction also covers the sizes below it.
  bool holds_below = false;
};

// Increasing sizes; a size that the one-element-per-rank floor makes equal to the one before it
// is left out (many ranks).
std::vector<CalibrationPoint> calibration_points(CollKind kind, int nranks);

}  // namespace efacoll

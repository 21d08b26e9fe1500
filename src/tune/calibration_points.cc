#include "tune/calibration_points.h"

#include <algorithm>

namespace efacoll {
namespace {

// 64 B, 512 B and 4 KiB: small calls, whose steps the link figures price alike whatever the
// pattern (4 ranks on a quiet 16-core host, shm: a reduce-scatter of 64 B-1 KiB by recursive
// halving ran 10.7-13.5 us, predicted 8.8-9.4, and the ring, predicted 11.5-11.9, ran
// 1.11-1.22x faster in runs that picked halving).
// From 8 KiB every power of two: on tcp the time of a pattern jumps between neighbouring sizes
// (messages past the eager limit wait for the receiver to be scheduled), which a geometric blend
// of points four times apart misses by up to 1.8x.
// 1 and 2 MiB: there the ring starts to cut its blocks into chunks, an overlap the points below
// cannot price (4 ranks, a quiet 16-core host: a 1 MiB reduce-scatter ring in 64 KiB chunks ran
// 1.2-1.7x its prediction on tcp, recursive halving 0.75-1.0x, and the ring, the pick, was
// 1.15-1.20x slower in every run).
constexpr size_t kSizes[] = {64,       512,       4 << 10,   8 << 10,   16 << 10, 32 << 10,
                             64 << 10, 128 << 10, 256 << 10, 512 << 10, 1 << 20,  2 << 20};
// Points asked for at 1 KiB or less hold below: there a call's time is its steps' latency (a
// step costs microseconds, a kilobyte at most about one, on tcp). In practice that is the first
// point of each series (64 B, or one element per rank on many ranks).
constexpr size_t kLatencyBoundBytes = 1024;

}  // namespace

std::vector<CalibrationPoint> calibration_points(CollKind kind, int nranks) {
  const size_t ranks = static_cast<size_t>(std::max(nranks, 1));
  std::vector<CalibrationPoint> points;
  for (size_t size : kSizes) {
    CalibrationPoint p;
    p.count = size / sizeof(float);
    if (kind != CollKind::kAllreduce) p.count = std::max(p.count / ranks, size_t{1}) * ranks;
    p.bytes = p.count * sizeof(float);
    p.holds_below = size <= kLatencyBoundBytes;
    if (!points.empty() && p.bytes <= points.back().bytes) continue;
    points.push_back(p);
  }
  return points;
}

}  // namespace efacoll

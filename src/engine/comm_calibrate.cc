// EFACOLL_TUNE=calibrate: a communicator measures its own links when it is created, through the
// transport it will use, with timed ring allgathers of host memory (collective, a few
// milliseconds): small ones give the latency per step, large ones in one message per step the
// bandwidth, the same in many messages the cost of a message; a local reduction gives the
// reduction rate. Calls of 16 MiB and more are measured apart: host copies of data that no
// longer fits in caches move at a fraction of the small calls' rate. Every member then takes
// rank 0's figures, so that all choose alike.
#include <algorithm>
#include <chrono>
#include <vector>

#include "common/log.h"
#include "core/host_reduce.h"
#include "engine/comm_core.h"
#include "engine/engine_core.h"

namespace efacoll {
namespace {

template <typename Fn>
Status median_us(int reps, Fn&& fn, double* out) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    EFACOLL_RETURN_IF_ERROR(fn());
    t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                    .count());
  }
  std::sort(t.begin(), t.end());
  *out = t[t.size() / 2];
  return Status::ok();
}

// Median over repeats of time(b) - time(a), a and b run back to back each repeat: a per-message
// cost is such a difference, and a slow stretch of the machine then falls on both.
template <typename FnA, typename FnB>
Status median_diff_us(int reps, FnA&& a, FnB&& b, double* out) {
  std::vector<double> d;
  for (int i = 0; i < reps; ++i) {
    double ta = 0, tb = 0;
    EFACOLL_RETURN_IF_ERROR(median_us(1, a, &ta));
    EFACOLL_RETURN_IF_ERROR(median_us(1, b, &tb));
    d.push_back(tb - ta);
  }
  std::sort(d.begin(), d.end());
  *out = d[d.size() / 2];
  return Status::ok();
}

}  // namespace

Status CommCore::calibrate() {
  if (size_ < 2) return Status::ok();
  constexpr size_t kSmall = 8, kLarge = 256 << 10, kPiece = 16 << 10;
  // Pieces whose allgather result is 16 MiB or more: a large call's working set.
  const size_t huge = std::max<size_t>(kLarge, (size_t(16) << 20) / size_);
  std::vector<uint8_t> in(huge, 1), out(huge * size_);
  auto gather = [&](size_t bytes, size_t chunk) {
    return [&, bytes, chunk] { return host_allgather(in.data(), bytes, out.data(), chunk); };
  };
  double small = 0, large = 0, pieces = 0, reduce = 0, huge_us = 0, huge_reduce = 0;  // us
  // Messages past the providers' eager paths: one 16 KiB message a step, and 64 KiB as 4 KiB
  // messages against one.
  constexpr size_t kMid = 16 << 10, kSmallPieces = 64 << 10, kSmallPiece = 4 << 10;
  double mid = 0, small_pieces = 0;  // the pieces: extra time over one message a step
  EFACOLL_RETURN_IF_ERROR(median_us(2, gather(kSmall, kLarge), &small));  // warm-up
  EFACOLL_RETURN_IF_ERROR(median_us(21, gather(kSmall, kLarge), &small));
  EFACOLL_RETURN_IF_ERROR(median_us(9, gather(kLarge, kLarge), &large));
  EFACOLL_RETURN_IF_ERROR(
      median_diff_us(11, gather(kLarge, kLarge), gather(kLarge, kPiece), &pieces));
  EFACOLL_RETURN_IF_ERROR(median_us(15, gather(kMid, kMid), &mid));
  EFACOLL_RETURN_IF_ERROR(median_diff_us(11, gather(kSmallPieces, kSmallPieces),
                                         gather(kSmallPieces, kSmallPiece), &small_pieces));
  EFACOLL_RETURN_IF_ERROR(
      median_us(3, gather(huge, std::min(huge, engine_->config().max_chunk_bytes)), &huge_us));
  std::vector<float> a(huge * size_ / sizeof(float), 1.f), b(a.size(), 2.f);
  auto reduce_of = [&](size_t count) {
    return [&, count] {
      return host_reduce(a.data(), a.data(), b.data(), count, DType::kFloat32, ROp::kSum);
    };
  };
  EFACOLL_RETURN_IF_ERROR(median_us(5, reduce_of(kLarge / sizeof(float)), &reduce));
  EFACOLL_RETURN_IF_ERROR(median_us(3, reduce_of(a.size()), &huge_reduce));

  const double steps = size_ - 1;
  struct Figures {
    double alpha_us, alpha_large_us, gbps, large_gbps, per_message_us, small_message_us,
        reduce_gbps, reduce_large_gbps;
  } mine;
  mine.alpha_us = std::max(0.1, small / steps);
  mine.gbps = steps * kLarge / std::max(1.0, large - small) / 1e3;
  mine.per_message_us = std::max(0.01, pieces / (steps * (kLarge / kPiece - 1)));
  mine.reduce_gbps = kLarge / std::max(0.01, reduce) / 1e3;
  mine.large_gbps = steps * huge / std::max(1.0, huge_us - small) / 1e3;
  mine.alpha_large_us = std::max(mine.alpha_us, mid / steps - kMid / (mine.gbps * 1e3));
  mine.small_message_us = std::max(0.01, small_pieces / (steps * (kSmallPieces / kSmallPiece - 1)));
  mine.reduce_large_gbps = a.size() * sizeof(float) / std::max(0.01, huge_reduce) / 1e3;
  std::vector<Figures> all(size_);
  EFACOLL_RETURN_IF_ERROR(host_allgather(&mine, sizeof(mine), all.data()));
  const Figures& f = all[0];
  model_.intra = model_.inter = {f.alpha_us, f.gbps, f.large_gbps, f.alpha_large_us};
  model_.per_message_us = f.per_message_us;
  model_.small_message_us = f.small_message_us;
  model_.reduce_gbps = f.reduce_gbps;
  model_.reduce_large_gbps = f.reduce_large_gbps;
  model_.source = "calibrated";
  EFACOLL_INFO(kTune,
               "communicator %u calibrated: %.1f us a step (%.1f from 16 KiB messages), %.2f GB/s "
               "(%.2f from 16 MiB calls), %.2f us a message (%.2f up to 4 KiB), reductions "
               "%.2f GB/s (%.2f from 16 MiB)",
               id_, f.alpha_us, f.alpha_large_us, f.gbps, f.large_gbps, f.per_message_us,
               f.small_message_us, f.reduce_gbps, f.reduce_large_gbps);
  return Status::ok();
}

}  // namespace efacoll

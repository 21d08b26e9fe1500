#include "bandwidth.h"

namespace efacoll_bench {

size_t blocks_in_size(Collective c, int nranks) {
  return c == Collective::kAllreduce ? 1 : static_cast<size_t>(nranks);
}

size_t count_per_rank(Collective c, int nranks, DataType t, size_t size_bytes) {
  return size_bytes / (type_size(t) * blocks_in_size(c, nranks));
}

size_t measured_bytes(Collective c, int nranks, DataType t, size_t count) {
  return count * type_size(t) * blocks_in_size(c, nranks);
}

std::vector<SizeStep> size_steps(Collective c, int nranks, DataType t, size_t min_bytes,
                                 size_t max_bytes, size_t factor) {
  std::vector<SizeStep> steps;
  for (size_t size = min_bytes; size <= max_bytes; size *= factor) {
    const size_t count = count_per_rank(c, nranks, t, size);
    if (count > 0) steps.push_back({measured_bytes(c, nranks, t, count), count});
    if (size > max_bytes / factor) break;  // the next step would pass max (or overflow)
  }
  return steps;
}

double bus_factor(Collective c, int nranks) {
  const double n = nranks;
  return c == Collective::kAllreduce ? 2 * (n - 1) / n : (n - 1) / n;
}

double algbw_gbps(size_t size_bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(size_bytes) / seconds / 1e9 : 0;
}

double busbw_gbps(Collective c, int nranks, size_t size_bytes, double seconds) {
  return algbw_gbps(size_bytes, seconds) * bus_factor(c, nranks);
}

}  // namespace efacoll_bench

// The standard handling of rank counts that are not powers of two in the recursive algorithms:
// the largest power of two p at or below n does the exchanges; each of the `extra` = n - p ranks
// past it is paired with rank r - p, which carries its data through them.
#pragma once
#include <algorithm>
#include <vector>

#include "coll/chunked.h"
#include "coll/ring_layout.h"

namespace efacoll {

struct Fold {
  int p = 1, steps = 0, extra = 0;  // steps = log2 p
};

inline Fold fold_of(int n) {
  Fold f;
  while (f.p * 2 <= n) {
    f.p *= 2;
    ++f.steps;
  }
  f.extra = n - f.p;
  return f;
}

// The blocks a group of exchanging ranks [lo, lo + size) stands for: its own and its partners'.
inline std::vector<int> blocks_with_partners(const Fold& f, int lo, int size) {
  std::vector<int> blocks;
  for (int v = lo; v < lo + size; ++v) {
    blocks.push_back(v);
    if (v < f.extra) blocks.push_back(v + f.p);
  }
  return blocks;
}

// The most chunks any block takes.
inline size_t max_block_chunks(const RingLayout& layout, int n, size_t chunk) {
  size_t most = 1;
  for (int b = 0; b < n; ++b) most = std::max(most, chunk_count(layout.block_bytes(b), chunk));
  return most;
}

}  // namespace efacoll

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

// The exchanges block b takes to reach `holder` (one more for an extra rank's block, folded in
// before them): where every message takes as long, the time it arrives.
inline int hops_to(const Fold& f, int b, int holder) {
  int apart = (b >= f.p ? b - f.p : b) ^ holder, hops = b >= f.p ? 1 : 0;
  for (; apart; apart &= apart - 1) ++hops;
  return hops;
}

// The blocks of holder's group of `size` in the order they reach it, and so the order it sends
// them on (each as soon as it is in). The receiver posts its receives in this order too, so that
// a provider matches each arriving message with the first receive it tries: udp;ofi_rxd 1.17
// loses multi-packet messages from a peer that arrive in another order than their receives were
// posted. Chunks of blocks from different peers can still be ready out of this order; on such a
// provider the executor holds each send until those to the same peer listed before it are posted
// (ProviderQuirks::needs_posting_order).
inline std::vector<int> blocks_in_arrival_order(const Fold& f, int holder, int size) {
  std::vector<int> blocks = blocks_with_partners(f, holder & ~(size - 1), size);
  std::stable_sort(blocks.begin(), blocks.end(),
                   [&](int a, int b) { return hops_to(f, a, holder) < hops_to(f, b, holder); });
  return blocks;
}

// The most chunks any block takes.
inline size_t max_block_chunks(const RingLayout& layout, int n, size_t chunk) {
  size_t most = 1;
  for (int b = 0; b < n; ++b) most = std::max(most, chunk_count(layout.block_bytes(b), chunk));
  return most;
}

}  // namespace efacoll

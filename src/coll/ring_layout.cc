#include "coll/ring_layout.h"

#include <algorithm>

namespace efacoll {

RingLayout::RingLayout(const RingArgs& args) : rank_(args.rank), n_(args.nranks) {
  // A chunk holds whole elements, and at least one.
  size_t elems = std::max<size_t>(1, args.chunk_bytes / args.elem_size);
  chunk_ = elems * args.elem_size;
  offsets_.push_back(0);
  for (size_t count : args.block_counts) {
    size_t b = count * args.elem_size;
    bytes_.push_back(b);
    chunks_.push_back((b + chunk_ - 1) / chunk_);
    offsets_.push_back(offsets_.back() + b);
    max_chunks_ = std::max(max_chunks_, chunks_.back());
  }
}

size_t RingLayout::chunk_bytes(int b, int c) const {
  size_t start = chunk_offset(b, c);
  return std::min(chunk_, bytes_[b] - start);
}

bool RingLayout::msg_ids_fit(int steps) const {
  return static_cast<uint64_t>(steps) * std::max<size_t>(max_chunks_, 1) <= kMaxMsgId;
}

void even_slice(size_t count, int n, int p, size_t* begin, size_t* len) {
  const size_t base = count / n, extra = count % n;
  *begin = p * base + std::min<size_t>(p, extra);
  *len = base + (static_cast<size_t>(p) < extra ? 1 : 0);
}

std::vector<size_t> even_blocks(size_t count, int n) {
  std::vector<size_t> blocks(n, count / n);
  for (size_t i = 0; i < count % n; ++i) ++blocks[i];
  return blocks;
}

size_t call_bytes(const RingArgs& ring) {
  size_t bytes = 0;
  for (size_t c : ring.block_counts) bytes += c * ring.elem_size;
  return bytes;
}

}  // namespace efacoll

// Geometry shared by the ring builders: blocks (one per rank) split into pipelined chunks.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/schedule.h"

namespace efacoll {

struct RingArgs {
  int rank = 0;
  int nranks = 1;
  size_t elem_size = 1;
  std::vector<size_t> block_counts;  // elements of each rank's block
  bool inplace = false;
  size_t chunk_bytes = 1 << 19;
};

// The bytes the tuner sizes a call by: allreduce the vector, allgather the result,
// reduce-scatter the input (every block).
size_t call_bytes(const RingArgs& ring);

class RingLayout {
 public:
  explicit RingLayout(const RingArgs& args);

  int mod(int x) const { return ((x % n_) + n_) % n_; }
  int right() const { return mod(rank_ + 1); }
  int left() const { return mod(rank_ - 1); }
  size_t block_offset(int b) const { return offsets_[b]; }  // bytes
  size_t block_bytes(int b) const { return bytes_[b]; }
  size_t total_bytes() const { return offsets_.back(); }
  int chunks(int b) const { return static_cast<int>(chunks_[b]); }
  size_t chunk_offset(int b, int c) const { return static_cast<size_t>(c) * chunk_; }  // in block
  size_t chunk_bytes(int b, int c) const;
  // Same value on sender and receiver: both know every block's size.
  uint32_t msg_id(int step, int c) const { return static_cast<uint32_t>(step * max_chunks_ + c); }
  bool msg_ids_fit(int steps) const;

 private:
  int rank_, n_;
  size_t chunk_;
  std::vector<size_t> offsets_, bytes_, chunks_;
  size_t max_chunks_ = 0;
};

// Splits count elements into n blocks whose sizes differ by at most one.
std::vector<size_t> even_blocks(size_t count, int n);
// Block p of that split: [*begin, *begin + *len).
void even_slice(size_t count, int n, int p, size_t* begin, size_t* len);

}  // namespace efacoll

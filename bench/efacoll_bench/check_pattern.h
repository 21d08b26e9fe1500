// The data -c checks with: input values that depend on (rank, index) and the results they must
// give, computed here and never through MPI (an MPI's own reduction can be wrong, e.g. on 8-bit
// overflow). Every value is an integer that stays exact and in range for the type and the op over
// all ranks, so a result is either exactly right or wrong.
#ifndef EFACOLL_BENCH_CHECK_PATTERN_H
#define EFACOLL_BENCH_CHECK_PATTERN_H

#include <cstddef>
#include <cstdint>
#include <vector>

#include "bench_types.h"

namespace efacoll_bench {

struct CheckResult {
  size_t wrong = 0;
  size_t first = 0;  // index of the first wrong element, when there is one
  double got = 0, want = 0;
};

class CheckPattern {
 public:
  CheckPattern(Collective collective, DataType type, ReduceOp op, int nranks);

  // Outputs are filled with this byte before a checked call: as an element it is never a right
  // answer (NaN, -1 or the largest unsigned value), so an element left unwritten counts as wrong.
  static constexpr unsigned char kPoisonByte = 0xff;

  // Writes `rank`'s input elements [first, first + n) to `out`, in the type.
  void write_inputs(int rank, size_t first, size_t n, void* out) const;
  // `result` should hold elements [first, first + n) of the reduction over all ranks.
  CheckResult check_reduced(const void* result, size_t first, size_t n) const;
  // `result` should hold nranks blocks of `count`: block r is rank r's inputs [0, count).
  CheckResult check_gathered(const void* result, size_t count) const;

  int64_t input(int rank, size_t index) const;
  int64_t reduced(size_t index) const { return reduced_[index % period_]; }

 private:
  DataType type_;
  ReduceOp op_;  // the pattern's op: allgather and float bitwise ops use max's values
  int nranks_;
  int64_t sum_modulus_ = 1, prod_stride_ = 2;
  size_t period_ = 1;             // inputs depend on index % period_ only
  std::vector<int64_t> reduced_;  // the reduction over ranks, by index % period_
};

}  // namespace efacoll_bench

#endif

// Inputs and independently computed results for the fault tests. Every element is a hash of
// (rank, global index), so a chunk that lands in the wrong place, twice, or from the wrong call
// shows (the unit tests' reference repeats with a short period: fine there, blind here).
// Values are integers that no sum of up to 64 ranks can overflow or round.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "efacoll/types.h"

namespace efacoll {
namespace fault {

using Bytes = std::vector<uint8_t>;

// One collective call as the tests describe it. count: allreduce, the vector's elements;
// allgather, each rank's contribution; reduce-scatter, the elements each rank receives.
struct CallSpec {
  CollKind kind = CollKind::kAllreduce;
  DType dtype = DType::kInt64;
  ROp op = ROp::kSum;
  size_t count = 0;
};

// The (type, op) pairs the tests cycle through: int64 sum, float64 sum, int32 max, uint8 bxor.
CallSpec call_for(CollKind kind, size_t bytes, size_t index);
std::string describe(const CallSpec& call);

// What this rank passes in (sendbuf) and must find in recvbuf afterwards.
Bytes call_input(const CallSpec& call, int rank, int nranks);
Bytes call_expected(const CallSpec& call, int rank, int nranks);
// "" when equal, else the first differing element.
std::string first_difference(const Bytes& got, const Bytes& want, DType type);

}  // namespace fault
}  // namespace efacoll

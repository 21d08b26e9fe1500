// Independent reference for collective results: integer-valued inputs per (rank, index) and
// results folded with plain C++ operators, not with the engine's reduction code.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "efacoll/types.h"

namespace efacoll {
namespace testing {

using Bytes = std::vector<uint8_t>;

Bytes make_input(DType type, ROp op, int rank, size_t count, size_t first_index = 0);
// Element i of the result of reducing every rank's make_input(type, op, rank, count).
Bytes expected_reduction(DType type, ROp op, int nranks, size_t count);
// Every (type, op) pair MPI allows, written out by hand (MPI-3.1 §5.9.2).
std::vector<std::pair<DType, ROp>> allowed_pairs();
// "" when equal, else where they differ. Floating types compare by value (the sign of a zero
// may depend on the order of reduction); the others bit for bit.
std::string compare(const Bytes& got, const Bytes& want, DType type);

}  // namespace testing
}  // namespace efacoll

// What a rank was asked to do, in the 12 bits a message tag carries (transport/tag.h): the
// collective, the type, the op and two bits of the element count. Ranks compare it on every
// message they receive, so that mismatched calls end in an error that says what differed
// instead of a hang or silently mixed data. Counts that differ also show as messages of the
// wrong length, which the executor reports as well.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "efacoll/types.h"
#include "transport/tag.h"

namespace efacoll {

uint32_t call_signature(CollKind kind, DType dtype, ROp op, size_t total_count);
// The signature a call gives its peers: kPoisonSignature for one it takes part in only so that
// they stop (CollArgs::abandoned).
inline uint32_t given_signature(bool abandoned, CollKind kind, DType dtype, ROp op,
                                size_t total_count) {
  return abandoned ? kPoisonSignature : call_signature(kind, dtype, op, total_count);
}

// Whether two calls' messages are the same in number and length, so that each rank's schedule
// still completes: only the op, or a type of the same size, differs (as far as the count's two
// bits tell).
bool same_shape(uint32_t mine, uint32_t theirs);

// "allreduce of float with max" and, where the counts' bits differ, "a different count";
// `theirs` from rank `peer` (-1: a peer not known by rank). Empty when they agree.
std::string describe_mismatch(uint32_t mine, uint32_t theirs, int peer);

}  // namespace efacoll

#include "gpu/ll_protocol.h"

#include <algorithm>

namespace efacoll {

size_t ll_slot_bytes(size_t push_limit, int nranks) {
  if (nranks < 2 || nranks > kLlMaxRanks) return 0;
  return push_limit / (nranks - 1) / 16 * 16;
}

bool ll_plan(CollKind kind, size_t elem_size, size_t count, const size_t* recvcounts, int rank,
             int nranks, bool inplace, size_t slot_bytes, LlCall* call) {
  if (nranks < 1 || nranks > kLlMaxRanks || elem_size == 0 || elem_size > 16) return false;
  if (kind == CollKind::kReduceScatter && recvcounts == nullptr) return false;
  call->kind = kind;
  call->rank = rank;
  call->nranks = nranks;
  call->inplace = inplace;
  call->split = kind == CollKind::kReduceScatter && inplace;
  call->region.slot_bytes = slot_bytes;
  call->region.nranks = nranks;
  size_t offset = 0, largest = 0;
  for (int q = 0; q < nranks; ++q) {
    const size_t bytes = (kind == CollKind::kReduceScatter ? recvcounts[q] : count) * elem_size;
    call->bytes_to[q] = bytes;
    call->offset_to[q] = kind == CollKind::kReduceScatter ? offset : 0;
    offset += bytes;
    largest = std::max(largest, bytes);
  }
  if (largest > slot_bytes) return false;
  // Packed words take twice the data's bytes, in the slot's second half.
  call->packed = largest <= kLlPackedMaxBytes && 2 * ((largest + 3) / 4 * 4) <= slot_bytes / 2;
  // Segments are whole 16-byte lanes, so never split an element (every element size divides 16).
  const size_t want = (largest + kLlSegmentTarget - 1) / kLlSegmentTarget;
  call->segments = static_cast<unsigned>(std::min<size_t>(want, kLlMaxSegments));
  call->segment_bytes = 0;
  if (call->segments) {
    const size_t per = (largest + call->segments - 1) / call->segments;
    call->segment_bytes = (per + 15) / 16 * 16;
    call->segments =
        static_cast<unsigned>((largest + call->segment_bytes - 1) / call->segment_bytes);
  }
  return true;
}

}  // namespace efacoll

// Moving a contiguous byte range as several messages of at most one chunk each: the builders of
// the tree and recursive algorithms share it. Message ids are base + chunk index; both ends
// derive them from the range's size, which both know.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/schedule.h"

namespace efacoll {

inline size_t chunk_count(size_t bytes, size_t chunk) { return (bytes + chunk - 1) / chunk; }

// Adds one op per chunk (a send from `at`, or a receive into it) and returns their ids;
// `deps` must complete before each of them.
std::vector<uint32_t> add_chunked(Schedule* s, OpKind kind, int peer, uint32_t base_msg,
                                  uint32_t step, BufRef at, size_t bytes, size_t chunk,
                                  const std::vector<uint32_t>& deps);

}  // namespace efacoll

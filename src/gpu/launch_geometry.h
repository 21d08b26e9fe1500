// Grid shape for element-wise kernels, on the host so that it is unit-tested without a GPU.
#pragma once
#include <cstddef>
#include <cstdint>

namespace efacoll {

struct LaunchGeometry {
  unsigned blocks = 0;  // 0: nothing to launch
  unsigned threads = 0;
  size_t vector_width = 1;  // elements per 16-byte access; 1 when a pointer is not 16-aligned
};

// Enough blocks to keep every SM busy for large counts, never more than the work needs.
LaunchGeometry reduce_geometry(size_t count, size_t elem_size, const void* dst, const void* a,
                               const void* b, int sm_count);

}  // namespace efacoll

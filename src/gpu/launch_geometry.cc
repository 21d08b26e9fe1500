#include "gpu/launch_geometry.h"

#include <algorithm>

namespace efacoll {

LaunchGeometry reduce_geometry(size_t count, size_t elem_size, const void* dst, const void* a,
                               const void* b, int sm_count) {
  LaunchGeometry g;
  if (count == 0 || elem_size == 0) return g;
  auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  if (elem_size <= 16 && 16 % elem_size == 0 && aligned(dst) && aligned(a) && aligned(b)) {
    g.vector_width = 16 / elem_size;
  }
  g.threads = 256;
  const size_t items = (count + g.vector_width - 1) / g.vector_width;
  const size_t needed = (items + g.threads - 1) / g.threads;
  // Four resident blocks per SM are plenty for a memory-bound loop; the kernel strides the rest.
  const size_t cap = static_cast<size_t>(std::max(sm_count, 1)) * 4;
  g.blocks = static_cast<unsigned>(std::min(needed, cap));
  return g;
}

}  // namespace efacoll

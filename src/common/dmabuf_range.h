// A range of GPU memory exported as a dma-buf: what the GPU layer hands out (gpu/dmabuf.h) and
// the fabric registers (FI_MR_DMABUF), so that neither layer needs the other.
#pragma once
#include <cstddef>
#include <cstdint>

namespace efacoll {

struct DmabufRange {
  int fd = -1;            // owned by whoever received the range: closed once registered
  uint64_t offset = 0;    // of the range's first byte in the dma-buf
  void* base = nullptr;   // the dma-buf's first byte in this process (page-aligned)
  size_t bytes = 0;       // the range's length
};

}  // namespace efacoll

// Element-wise reduction of device memory, dst = a op b (dst may alias a or b exactly),
// enqueued on a stream. Every (type, op) pair op_allowed() accepts has a kernel.
#pragma once
#include <cstddef>

#include "efacoll/status.h"
#include "efacoll/types.h"

namespace efacoll {

// stream: a cudaStream_t. Returns kCuda (naming the CUDA call) on launch failure.
Status gpu_reduce(void* dst, const void* a, const void* b, size_t count, DType type, ROp op,
                  void* stream);

}  // namespace efacoll

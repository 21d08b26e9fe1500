// Where a schedule's local operations (reductions, copies) run: inline on the host
// (core/local_ops.h), or enqueued on a GPU's streams (gpu/gpu_runtime.h). Completions arrive
// like the transport's, through Completion callbacks.
#pragma once
#include <cstddef>
#include <cstdint>

#include "common/completion.h"
#include "efacoll/status.h"
#include "efacoll/types.h"

namespace efacoll {

enum class CopyKind : uint8_t { kHostToHost, kHostToDevice, kDeviceToHost, kDeviceToDevice };

class LocalOps {
 public:
  virtual ~LocalOps() = default;
  // dst = a op b element-wise; dst may alias a or b exactly.
  virtual Status reduce(void* dst, const void* a, const void* b, size_t count, DType type, ROp op,
                        Completion* completion) = 0;
  virtual Status copy(void* dst, const void* src, size_t bytes, CopyKind kind,
                      Completion* completion) = 0;
  virtual Status progress(int* completed) = 0;
  // Blocks until all enqueued work is done and visible to any later work on the device.
  virtual Status finish() = 0;
};

}  // namespace efacoll

// Where a schedule's local operations (reductions, copies) run: inline on the host, or enqueued
// on a GPU's streams. Completions arrive like the transport's, through Completion callbacks.
#pragma once
#include <cstddef>

#include "efacoll/status.h"
#include "efacoll/types.h"
#include "transport/transport.h"

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

// Runs each operation before returning and reports it at once.
class HostLocalOps : public LocalOps {
 public:
  Status reduce(void* dst, const void* a, const void* b, size_t count, DType type, ROp op,
                Completion* completion) override;
  Status copy(void* dst, const void* src, size_t bytes, CopyKind kind,
              Completion* completion) override;
  Status progress(int* completed) override { return *completed = 0, Status::ok(); }
  Status finish() override { return Status::ok(); }
};

}  // namespace efacoll

// The host's local operations: each reduction or copy runs before the call returns.
#pragma once
#include <cstddef>

#include "common/local_ops.h"

namespace efacoll {

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

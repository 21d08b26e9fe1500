#include "core/local_ops.h"

#include <cstring>

#include "core/host_reduce.h"

namespace efacoll {

Status HostLocalOps::reduce(void* dst, const void* a, const void* b, size_t count, DType type,
                            ROp op, Completion* completion) {
  Status st = host_reduce(dst, a, b, count, type, op);
  if (st.is_ok()) completion->fn(completion, st, count * dtype_size(type));
  return st;
}

Status HostLocalOps::copy(void* dst, const void* src, size_t bytes, CopyKind,
                          Completion* completion) {
  std::memmove(dst, src, bytes);
  completion->fn(completion, Status::ok(), bytes);
  return Status::ok();
}

}  // namespace efacoll

// Element-wise reduction of host memory: dst[i] = a[i] op b[i]. dst may alias a or b exactly.
#pragma once
#include <cstddef>

#include "efacoll/status.h"
#include "efacoll/types.h"

namespace efacoll {

Status host_reduce(void* dst, const void* a, const void* b, size_t count, DType type, ROp op);

}  // namespace efacoll

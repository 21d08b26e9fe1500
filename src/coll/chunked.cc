#include "coll/chunked.h"

#include <algorithm>

namespace efacoll {

std::vector<uint32_t> add_chunked(Schedule* s, OpKind kind, int peer, uint32_t base_msg,
                                  uint32_t step, BufRef at, size_t bytes, size_t chunk,
                                  const std::vector<uint32_t>& deps) {
  std::vector<uint32_t> ids;
  for (size_t c = 0, off = 0; off < bytes; ++c, off += chunk) {
    Op op(kind);
    op.peer = peer;
    op.msg_id = base_msg + static_cast<uint32_t>(c);
    op.step = step;
    op.bytes = std::min(chunk, bytes - off);
    BufRef ref = {at.buf, at.offset + off};
    if (kind == OpKind::kSend)
      op.src = ref;
    else
      op.dst = ref;
    const uint32_t id = s->add(op);
    for (uint32_t d : deps) s->depend(d, id);
    ids.push_back(id);
  }
  return ids;
}

}  // namespace efacoll

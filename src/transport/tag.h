// 64-bit message tags: [63:52] communicator id | [51:40] collective sequence | [39:20] sender rank
// | [19:0] message id. Providers without FI_DIRECTED_RECV (tcp) match on the tag alone, and EFA
// promises no order, so the tag alone must keep every message of every collective apart.
#pragma once
#include <cstdint>

namespace efacoll {

constexpr int kCommIdBits = 12;
constexpr uint32_t kMaxCommIds = 1u << kCommIdBits;
constexpr uint32_t kMaxRanksInTag = 1u << 20;
constexpr uint64_t kMaxMsgIdInTag = (1u << 20) - 1;  // the low bits: the message id

inline uint64_t make_tag(uint32_t comm_id, uint32_t seq, uint32_t sender, uint32_t msg_id) {
  return (static_cast<uint64_t>(comm_id & 0xfff) << 52) |
         (static_cast<uint64_t>(seq & 0xfff) << 40) |
         (static_cast<uint64_t>(sender & 0xfffff) << 20) | (msg_id & 0xfffff);
}

}  // namespace efacoll

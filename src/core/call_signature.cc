#include "core/call_signature.h"

namespace efacoll {
namespace {

// kind 2 bits (3 only in the poison value) | dtype 4 | op 4 | count 2.
static_assert(static_cast<int>(CollKind::kCount) <= 3, "collective kinds fit in 2 bits");
static_assert(static_cast<int>(DType::kCount) <= 16, "types fit in 4 bits");
static_assert(static_cast<int>(ROp::kCount) <= 16, "ops fit in 4 bits");

uint32_t kind_of(uint32_t s) { return s >> 10; }
uint32_t dtype_of(uint32_t s) { return (s >> 6) & 0xf; }
uint32_t op_of(uint32_t s) { return (s >> 2) & 0xf; }

std::string call_text(uint32_t s) {
  if (is_poison(s)) return "a call it had already found mismatched";
  const auto kind = static_cast<CollKind>(kind_of(s));
  std::string text =
      std::string(coll_name(kind)) + " of " + dtype_name(static_cast<DType>(dtype_of(s)));
  if (kind != CollKind::kAllgather)
    text += std::string(" with ") + op_name(static_cast<ROp>(op_of(s)));
  return text;
}

}  // namespace

uint32_t call_signature(CollKind kind, DType dtype, ROp op, size_t total_count) {
  // Allgather reduces nothing: its op is whatever the caller left there.
  const uint32_t op_bits = kind == CollKind::kAllgather ? 0 : static_cast<uint32_t>(op);
  const uint64_t mixed = total_count * 0x9e3779b97f4a7c15ull;
  return (static_cast<uint32_t>(kind) << 10) | (static_cast<uint32_t>(dtype) << 6) |
         (op_bits << 2) | static_cast<uint32_t>(mixed >> 62);
}

bool same_shape(uint32_t mine, uint32_t theirs) {
  constexpr uint32_t kNoCall = 3;  // the collective bits of poison and of a cut write
  if (kind_of(mine) == kNoCall || kind_of(theirs) == kNoCall) return false;
  return kind_of(mine) == kind_of(theirs) && (mine & 3) == (theirs & 3) &&
         dtype_size(static_cast<DType>(dtype_of(mine))) ==
             dtype_size(static_cast<DType>(dtype_of(theirs)));
}

std::string describe_mismatch(uint32_t mine, uint32_t theirs, int peer) {
  if (mine == theirs) return "";
  const std::string who = peer < 0 ? std::string("a peer") : "rank " + std::to_string(peer);
  if (is_poison(theirs)) return who + " stopped trusting this call: a mismatch elsewhere";
  if (theirs == kStaleSignature)
    return who + "'s message was one that a failed call long past left unreceived";
  if (theirs == kShortWriteSignature)
    return who + " moves another length in this message: a different count there";
  if ((mine >> 2) == (theirs >> 2))
    return who + " called " + call_text(theirs) + " with a different count";
  return who + " called " + call_text(theirs) + ", this rank " + call_text(mine);
}

}  // namespace efacoll

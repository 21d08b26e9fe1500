// Tagged sends and receives as the provider gets them. Where it cannot be trusted to apply a
// receive's ignore mask to a message that arrived first (signature_in_data_: shm 1.17 compares
// the whole tag then, so a message from a rank in a mismatched call waited unexpected for good
// and both ranks stalled), the call signature leaves the tag: it travels as CQ data, receives
// match the rest of the tag exactly, and each completion puts the signature back. Where it does
// not report a message longer than its receive (length_in_data_: udp;ofi_rxd 1.17), the
// sender's length travels in the CQ data as well. CQ data: signature in bits 0-11, the length's
// low 32 bits above.
#include <rdma/fi_tagged.h>

#include "transport/fabric/fabric_endpoint.h"
#include "transport/tag.h"

namespace efacoll {
namespace {

constexpr int kLengthShift = kSignatureBits;
constexpr uint64_t kLengthMask = 0xffffffffull;

}  // namespace

uint64_t FabricTransport::matched_tag(uint64_t tag) const {
  return signature_in_data_ ? with_signature(tag, 0) : tag;
}

uint64_t FabricTransport::cq_data(uint64_t tag, size_t len) const {
  uint64_t data = signature_in_data_ ? tag_signature(tag) : 0;
  if (length_in_data_) data |= (static_cast<uint64_t>(len) & kLengthMask) << kLengthShift;
  return data;
}

size_t FabricTransport::sent_length(uint64_t flags, uint64_t data, size_t len) const {
  if (!length_in_data_ || !(flags & FI_REMOTE_CQ_DATA)) return len;
  // Compared in the low 32 bits: a message of 4 GiB more would pass.
  const uint64_t sent = (data >> kLengthShift) & kLengthMask;
  return sent == (static_cast<uint64_t>(len) & kLengthMask) ? len : static_cast<size_t>(sent);
}

ssize_t FabricTransport::post_tsend(const void* buf, size_t len, void* desc, fi_addr_t peer,
                                    uint64_t tag, void* context) {
  if (!signature_in_data_ && !length_in_data_)
    return fi_tsend(ep_.get(), buf, len, desc, peer, tag, context);
  return fi_tsenddata(ep_.get(), buf, len, desc, cq_data(tag, len), peer, matched_tag(tag),
                      context);
}

ssize_t FabricTransport::post_tinject(const void* buf, size_t len, fi_addr_t peer, uint64_t tag) {
  if (!signature_in_data_ && !length_in_data_) return fi_tinject(ep_.get(), buf, len, peer, tag);
  return fi_tinjectdata(ep_.get(), buf, len, cq_data(tag, len), peer, matched_tag(tag));
}

ssize_t FabricTransport::post_trecv(void* buf, size_t len, void* desc, uint64_t tag,
                                    uint64_t ignore, void* context) {
  // The tag names the sender, so any source may match (tcp has no FI_DIRECTED_RECV).
  if (signature_in_data_) ignore &= ~kSignatureMask;
  return fi_trecv(ep_.get(), buf, len, desc, FI_ADDR_UNSPEC, matched_tag(tag), ignore, context);
}

uint64_t FabricTransport::arrived_tag(uint64_t tag, uint64_t flags, uint64_t data) const {
  if (!signature_in_data_ || !(flags & FI_REMOTE_CQ_DATA)) return tag;
  return with_signature(tag, static_cast<uint32_t>(data));
}

}  // namespace efacoll

// Tagged sends and receives as the provider gets them. Where it cannot be trusted to apply a
// receive's ignore mask to a message that arrived first (signature_in_data_: shm 1.17 compares
// the whole tag then, so a message from a rank in a mismatched call waited unexpected for good
// and both ranks stalled), the call signature leaves the tag: it travels as CQ data, receives
// match the rest of the tag exactly, and each completion puts the signature back. The tag's
// signature bits then carry bits 6-17 of the call's sequence instead: such a provider cannot
// peek either, so what a failed call left unreceived cannot be dropped (engine/comm_stale.cc),
// and with only the tag's 6 bits the call 64 later took it for its own and returned old data.
// Now a later call meets it only 2^18 calls on, and then knows it by the sequence's next 20 bits
// in the CQ data. Where the provider does not report a message longer than its receive
// (length_in_data_: udp;ofi_rxd 1.17), the sender's length travels in the CQ data as well.
// CQ data: signature in bits 0-11, the length's low 32 bits above, sequence bits 18-37 in 44-63.
#include <rdma/fi_tagged.h>

#include "transport/fabric/fabric_endpoint.h"
#include "transport/tag.h"

namespace efacoll {
namespace {

constexpr int kLengthShift = kSignatureBits;
constexpr uint64_t kLengthMask = 0xffffffffull;
constexpr int kSeqInDataShift = 44;
constexpr int kSeqInDataBits = 20;

// The sequence bits the CQ data carries, above those in the tag.
uint64_t seq_in_data(uint32_t call_seq) {
  return (call_seq >> (kTagSeqBits + kSignatureBits)) & ((1u << kSeqInDataBits) - 1);
}

}  // namespace

uint64_t FabricTransport::matched_tag(uint64_t tag, uint32_t call_seq) const {
  return signature_in_data_ ? with_signature(tag, call_seq >> kTagSeqBits) : tag;
}

uint64_t FabricTransport::cq_data(uint64_t tag, size_t len, uint32_t call_seq) const {
  uint64_t data = 0;
  if (signature_in_data_) data = tag_signature(tag) | seq_in_data(call_seq) << kSeqInDataShift;
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
                                    uint64_t tag, uint32_t call_seq, void* context) {
  ProviderClock::Scope timed(clock_, "fi_tsend");
  if (!signature_in_data_ && !length_in_data_)
    return fi_tsend(ep_.get(), buf, len, desc, peer, tag, context);
  return fi_tsenddata(ep_.get(), buf, len, desc, cq_data(tag, len, call_seq), peer,
                      matched_tag(tag, call_seq), context);
}

ssize_t FabricTransport::post_tinject(const void* buf, size_t len, fi_addr_t peer, uint64_t tag,
                                      uint32_t call_seq) {
  ProviderClock::Scope timed(clock_, "fi_tinject");
  if (!signature_in_data_ && !length_in_data_) return fi_tinject(ep_.get(), buf, len, peer, tag);
  return fi_tinjectdata(ep_.get(), buf, len, cq_data(tag, len, call_seq), peer,
                        matched_tag(tag, call_seq));
}

ssize_t FabricTransport::post_trecv(void* buf, size_t len, void* desc, uint64_t tag,
                                    uint64_t ignore, uint32_t call_seq, Request* r) {
  ProviderClock::Scope timed(clock_, "fi_trecv");
  // The tag names the sender, so any source may match (tcp has no FI_DIRECTED_RECV).
  if (signature_in_data_) ignore &= ~kSignatureMask;
  r->match_tag = matched_tag(tag, call_seq);
  r->match_ignore = ignore;
  return fi_trecv(ep_.get(), buf, len, desc, FI_ADDR_UNSPEC, r->match_tag, ignore, &r->context);
}

uint64_t FabricTransport::arrived_tag(uint64_t tag, uint64_t flags, uint64_t data,
                                      uint32_t call_seq) const {
  if (!signature_in_data_ || !(flags & FI_REMOTE_CQ_DATA)) return tag;
  const bool stale =
      ((data >> kSeqInDataShift) & ((1u << kSeqInDataBits) - 1)) != seq_in_data(call_seq);
  return with_signature(tag, stale ? kStaleSignature : static_cast<uint32_t>(data));
}

}  // namespace efacoll

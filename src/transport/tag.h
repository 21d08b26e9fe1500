// 64-bit message tags: [63:52] communicator id | [51:46] collective sequence | [45:34] call
// signature | [33:20] sender rank | [19:0] message id. Providers without FI_DIRECTED_RECV (tcp)
// match on the tag alone, and EFA promises no order, so the tag alone must keep every message of
// every collective apart.
// - Sequence: a rank cannot finish call k+1 before every rank has started it (each result needs
//   every rank's data), so calls more than one apart never meet; 64 values are plenty.
// - Signature: what the sender was asked to do (core/call_signature.h); receives ignore these
//   bits and compare them on arrival, so that ranks making different calls find out instead of
//   waiting.
#pragma once
#include <cstdint>

namespace efacoll {

constexpr int kCommIdBits = 12;
constexpr int kTagSeqBits = 6;  // the sequence bits of every tag
constexpr uint32_t kTagSeqValues = 1u << kTagSeqBits;
constexpr uint32_t kMaxCommIds = 1u << kCommIdBits;
constexpr uint32_t kMaxRanksInTag = 1u << 14;
constexpr uint64_t kMaxMsgIdInTag = (1u << 20) - 1;  // the low bits: the message id
constexpr int kSignatureShift = 34;
constexpr uint32_t kSignatureBits = 12;
constexpr uint64_t kSignatureMask = ((uint64_t{1} << kSignatureBits) - 1) << kSignatureShift;
// Sent instead of the signature by a rank that has found a mismatch: its later messages carry
// no valid data, and every receiver stops trusting the call too.
constexpr uint32_t kPoisonSignature = 0xfff;
// Sent instead of the signature with a one-sided write cut to, or short of, the length the
// receiver's clear-to-send asked for: the two calls move different lengths (another count).
// Unlike poison, it says what differed, so the receiver names it even when the sender's own
// finding reaches nobody first. (All three have the collective bits 3, which no call has.)
constexpr uint32_t kShortWriteSignature = 0xffe;
// Poison from a rank whose mismatch changes no message (another op, or a type of the same size,
// core/call_signature.h): every message of the schedule still comes, so its receivers run their
// schedules to the end as it does, instead of giving up and stranding a peer still on its way.
constexpr uint32_t kSameShapePoisonSignature = 0xffd;
// Put in place of the signature of a message that a call long past left unreceived, found by
// the sequence bits beyond the tag's (transport/fabric/fabric_tags.cc: shm): its data is not
// this call's. Its collective bits are 3 too.
constexpr uint32_t kStaleSignature = 0xffc;
inline bool is_poison(uint32_t signature) {
  return signature == kPoisonSignature || signature == kSameShapePoisonSignature;
}

// Notices (core/peer_watch.h): zero-byte messages whose ids lie above every schedule's
// (core/schedule.h, kMaxMsgId): the reason in 2 bits, then 10 more bits of the call's sequence
// than the tag's own 6, so that a notice left over from an earlier call is not taken for one of
// this call.
constexpr uint32_t kNoticeMsgBase = 0xff000;
constexpr uint64_t kNoticeReasonMask = uint64_t{3} << 10;
inline uint32_t notice_msg_id(uint32_t reason, uint32_t seq) {
  return kNoticeMsgBase | ((reason & 3) << 10) | ((seq >> kTagSeqBits) & 0x3ff);
}
// The fourth reason: a call card (core/peer_watch.h), sent only where the provider cannot peek.
constexpr uint32_t kCardReason = 3;
// In place of the call's signature in the card of a rank that gave up on the call for a timeout
// or an error: the card's count then holds the reason and the rank it found silent. Its
// collective bits are 3 too.
constexpr uint32_t kGaveUpSignature = 0xffb;
// In place of the signature in the remote CQ data of a write without data (into the receiver's
// answer pad): the answer to a clear-to-send that a failed call left unanswered
// (Transport::answer_stale). No data will come for it. Its collective bits are 3 too.
constexpr uint32_t kNoDataSignature = 0xffa;

inline uint64_t make_tag(uint32_t comm_id, uint32_t seq, uint32_t sender, uint32_t msg_id,
                         uint32_t signature = 0) {
  return (static_cast<uint64_t>(comm_id & 0xfff) << 52) |
         (static_cast<uint64_t>(seq & (kTagSeqValues - 1)) << 46) |
         (static_cast<uint64_t>(signature & 0xfff) << kSignatureShift) |
         (static_cast<uint64_t>(sender & 0x3fff) << 20) | (msg_id & 0xfffff);
}

constexpr uint64_t kSenderMask = uint64_t{0x3fff} << 20;
inline int tag_sender(uint64_t tag) { return static_cast<int>((tag >> 20) & 0x3fff); }
inline uint32_t tag_msg_id(uint64_t tag) { return static_cast<uint32_t>(tag & kMaxMsgIdInTag); }

inline uint32_t tag_signature(uint64_t tag) {
  return static_cast<uint32_t>((tag & kSignatureMask) >> kSignatureShift);
}
// The tag with its signature bits replaced.
inline uint64_t with_signature(uint64_t tag, uint32_t signature) {
  return (tag & ~kSignatureMask) | (static_cast<uint64_t>(signature & 0xfff) << kSignatureShift);
}

}  // namespace efacoll

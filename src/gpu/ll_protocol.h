// The low-latency protocol for small GPU collectives inside one node (NCCL's "LL" idea): one
// kernel per call, no host barrier. Each rank pushes its data straight into its peers' IPC
// regions, then raises a flag there per segment (stored after a system-scope fence); each rank
// waits on its own flags and reduces (or gathers) from local memory. Two parities of slots, by
// call sequence, let a call start while a slow peer still reads the previous one: a peer can be
// at most one call behind, since our previous call needed its data.
// Everything here is plain host C++ so that the layout and the plan are tested without a GPU.
#pragma once
#include <cstddef>
#include <cstdint>

#include "efacoll/types.h"

// The region's layout is computed the same way by the host and by the kernel.
#ifdef __CUDACC__
#define EFACOLL_HOST_DEVICE __host__ __device__
#else
#define EFACOLL_HOST_DEVICE
#endif

namespace efacoll {

constexpr int kLlMaxRanks = 16;
constexpr unsigned kLlMaxSegments = 128;  // one thread block per segment
constexpr unsigned kLlThreads = 128;
constexpr size_t kLlSegmentTarget = 2048;  // bytes a block moves per peer, before segments grow
// Calls moving at most this much to each peer send packed words (4 data bytes + 4 flag bytes in
// one store, NCCL's "LL" format): twice the bytes but no fence and no separate flag round trip.
// Larger ones send plain data, then one flag per segment after a system-scope fence.
constexpr size_t kLlPackedMaxBytes = 16384;

// One rank's region, written by its peers:
//   data[parity][sender][slot_bytes], then flags[parity][sender][segment] (uint64: sequence),
//   then keys[parity][sender] (uint64: ll_key_word, the sender's call).
// Packed calls put their words in the second half of a slot and unpack into its first half.
struct LlRegion {
  size_t slot_bytes = 0;
  int nranks = 0;
  EFACOLL_HOST_DEVICE size_t data_offset(int parity, int sender) const {
    return (static_cast<size_t>(parity) * nranks + sender) * slot_bytes;
  }
  EFACOLL_HOST_DEVICE size_t flags_offset() const {
    return 2 * static_cast<size_t>(nranks) * slot_bytes;
  }
  EFACOLL_HOST_DEVICE size_t flag_index(int parity, int sender, unsigned segment) const {
    return (static_cast<size_t>(parity) * nranks + sender) * kLlMaxSegments + segment;
  }
  EFACOLL_HOST_DEVICE size_t keys_offset() const {
    return flags_offset() + 2 * static_cast<size_t>(nranks) * kLlMaxSegments * sizeof(uint64_t);
  }
  EFACOLL_HOST_DEVICE size_t key_index(int parity, int sender) const {
    return static_cast<size_t>(parity) * nranks + sender;
  }
  // Byte offset of a sender's key slot in the region.
  size_t key_byte_offset(int parity, int sender) const {
    return keys_offset() + key_index(parity, sender) * sizeof(uint64_t);
  }
  EFACOLL_HOST_DEVICE size_t total_bytes() const {
    return keys_offset() + 2 * static_cast<size_t>(nranks) * sizeof(uint64_t);
  }
};

// A call as the kernel compares it across ranks: ranks that called with another collective,
// type, op or count would otherwise mix their data without a word, or one would return while
// the other waits. 12 bits of call signature (core/call_signature.h), 2 bits of the path the
// call takes (LlPath) and the count's low 18 bits; stored beside the low half of the sequence,
// so that a key of an earlier call is not taken for this one's.
constexpr uint32_t kLlKeyCountBits = 18;
constexpr uint32_t kLlKeyCountMask = (1u << kLlKeyCountBits) - 1;
constexpr uint32_t kLlKeyPathShift = kLlKeyCountBits;
constexpr uint32_t kLlKeySignatureShift = kLlKeyCountBits + 2;
// The path of a GPU call inside the node. Calls that do not take this protocol store their key
// in the peers' regions too, once their first exchange has waited a while: a peer in this
// protocol then stops at once, and joins their exchange (kIpcDirect, kIpcRounds: one allgather
// of the same shape), so that every rank errs and all stay in step on the fabric.
enum class LlPath : uint32_t { kLowLatency = 0, kIpcDirect = 1, kIpcRounds = 2, kOther = 3 };
inline uint32_t ll_call_key(uint32_t signature, uint64_t count, LlPath path = LlPath::kLowLatency) {
  return ((signature & 0xfff) << kLlKeySignatureShift) |
         (static_cast<uint32_t>(path) << kLlKeyPathShift) |
         static_cast<uint32_t>(count & kLlKeyCountMask);
}
EFACOLL_HOST_DEVICE inline uint64_t ll_key_word(uint64_t seq, uint32_t key) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(seq)) << 32) | key;
}
inline uint32_t ll_key_signature(uint32_t key) { return key >> kLlKeySignatureShift; }
inline LlPath ll_key_path(uint32_t key) {
  return static_cast<LlPath>((key >> kLlKeyPathShift) & 3);
}
inline uint32_t ll_key_count_bits(uint32_t key) { return key & kLlKeyCountMask; }

// Why a kernel stopped (LlSignal::fault): the peer it names and, for another call, that peer's
// key. As one word: the key in the high half, then the kind, then 1 + the peer (0: no fault).
struct LlFault {
  enum Kind : uint32_t { kNone = 0, kSilent = 1, kOtherCall = 2 } kind = kNone;
  int peer = -1;
  uint32_t their_key = 0;
};
EFACOLL_HOST_DEVICE inline uint64_t ll_fault_word(LlFault::Kind kind, int peer, uint32_t key) {
  return (static_cast<uint64_t>(key) << 32) | (static_cast<uint64_t>(kind) << 16) |
         static_cast<uint64_t>(peer + 1);
}
inline LlFault ll_fault(uint64_t word) {
  LlFault f;
  if ((word & 0xffff) == 0) return f;
  f.kind = static_cast<LlFault::Kind>((word >> 16) & 0xffff);
  f.peer = static_cast<int>(word & 0xffff) - 1;
  f.their_key = static_cast<uint32_t>(word >> 32);
  return f;
}

struct LlCall {
  CollKind kind = CollKind::kAllreduce;
  DType dtype = DType::kByte;
  ROp op = ROp::kSum;
  int rank = 0, nranks = 0;
  uint64_t seq = 0;  // starts at 1: zeroed flags never match
  uint32_t key = 0;  // ll_call_key: compared with every peer's before any data is read
  // allreduce: the vector; allgather: this rank's block; reduce-scatter: the whole vector.
  const void* send = nullptr;
  void* recv = nullptr;
  bool inplace = false;
  LlRegion region;
  void* regions[kLlMaxRanks] = {};     // every rank's region as mapped here (own: local)
  size_t bytes_to[kLlMaxRanks] = {};   // what each rank receives from every sender
  size_t offset_to[kLlMaxRanks] = {};  // where that starts in send
  size_t segment_bytes = 0;
  unsigned segments = 0;  // 0: nothing moves
  // Push and finish as two launches: in-place reduce-scatter writes its result over input that
  // other blocks have still to push. Own data then goes through its own slot.
  bool split = false;
  bool packed = false;  // packed words (see kLlPackedMaxBytes)
  uint64_t timeout_ns = 0;
  // The caller lends its process's lock while the kernel waits: other threads' calls run
  // meanwhile, and their copies on the legacy stream must not wait for this kernel (even a
  // synchronisation of the legacy stream with nothing queued there waits for kernels on blocking
  // streams: 190 ms behind a 200 ms kernel, bench/cuda_call_wait.py on one H200).
  bool lends_lock = false;
};

// The slot each sender has in a rank's region, for a limit on what one rank pushes in a call
// (to all its peers together): 0 when the protocol is off or there is nobody to push to.
size_t ll_slot_bytes(size_t push_limit, int nranks);

// Fills sizes, offsets and segments from the call (recvcounts: reduce-scatter only). False when
// the communicator or a slot is too small for it.
bool ll_plan(CollKind kind, size_t elem_size, size_t count, const size_t* recvcounts, int rank,
             int nranks, bool inplace, size_t slot_bytes, LlCall* call);

}  // namespace efacoll

#include <cuda_runtime.h>

#include <cstring>

#include "gpu/ll_kernel.h"
#include "gpu/reduce_ops.cuh"

namespace efacoll {
namespace {

// Loads that bypass L1: the region is written by peers while this kernel runs.
template <typename T>
__device__ T load_cg(const T* p) {
  static_assert(
      sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8 || sizeof(T) == 16,
      "element size");
  using Raw = std::conditional_t<
      sizeof(T) == 1, unsigned char,
      std::conditional_t<
          sizeof(T) == 2, unsigned short,
          std::conditional_t<sizeof(T) == 4, unsigned int,
                             std::conditional_t<sizeof(T) == 8, unsigned long long, uint4>>>>;
  Raw raw = __ldcg(reinterpret_cast<const Raw*>(p));
  T value;
  memcpy(&value, &raw, sizeof(T));
  return value;
}

__device__ uint64_t load_acquire(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ void store_release(uint64_t* p, uint64_t v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
// Packed words need no ordering beyond their own single-copy atomicity.
__device__ uint64_t load_relaxed(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ void store_relaxed(uint64_t* p, uint64_t v) {
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ uint64_t now_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// How long a wait has lasted, leaving out the time the host process was stopped
// (LlSignal::heartbeat standing still for over a second). Asked every 1024 spins; it reads host
// memory only then, never when made, so that a wait that ends at once (most words of a packed
// message) costs no more than the clock read it always had.
class Patience {
 public:
  __device__ explicit Patience(const LlSignal& sig) : beat_(sig.heartbeat) {
    last_ = beat_at_ = now_ns();
  }
  __device__ bool exhausted(uint64_t timeout_ns) {
    constexpr uint64_t kHostSilentNs = 1000ull * 1000 * 1000;
    const uint64_t now = now_ns();
    if (beat_) {
      const uint64_t beats = *reinterpret_cast<const volatile uint64_t*>(beat_);
      if (!seen_ || beats != beats_) {
        seen_ = true;
        beats_ = beats;
        beat_at_ = now;
      }
    }
    if (!beat_ || now - beat_at_ < kHostSilentNs) counted_ += now - last_;
    last_ = now;
    return counted_ > timeout_ns;
  }

 private:
  const uint64_t* beat_;
  bool seen_ = false;
  uint64_t beats_ = 0, last_ = 0, beat_at_ = 0, counted_ = 0;
};

template <typename W>
__device__ void copy_as(uint8_t* dst, const uint8_t* src, size_t n) {
  const size_t words = n / sizeof(W);
  for (size_t k = threadIdx.x; k < words; k += blockDim.x) {
    reinterpret_cast<W*>(dst)[k] = load_cg(reinterpret_cast<const W*>(src) + k);
  }
  for (size_t k = words * sizeof(W) + threadIdx.x; k < n; k += blockDim.x)
    dst[k] = load_cg(src + k);
}

// The block copies n bytes in the widest lanes both pointers allow.
__device__ void block_copy(uint8_t* dst, const uint8_t* src, size_t n) {
  const uintptr_t both = reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src);
  if ((both & 15) == 0) {
    copy_as<uint4>(dst, src, n);
  } else if ((both & 7) == 0) {
    copy_as<unsigned long long>(dst, src, n);
  } else if ((both & 3) == 0) {
    copy_as<unsigned int>(dst, src, n);
  } else {
    copy_as<unsigned char>(dst, src, n);
  }
}

// dst[i] = in[0][i] op in[1][i] op ... in rank order, so every rank computes the same bits.
template <typename T, typename F>
__device__ void block_reduce(uint8_t* dst, const uint8_t* const* in, int nin, size_t bytes, F f) {
  const size_t n = bytes / sizeof(T);
  uintptr_t all = reinterpret_cast<uintptr_t>(dst);
  for (int q = 0; q < nin; ++q) all |= reinterpret_cast<uintptr_t>(in[q]);
  constexpr int kWidth = 16 / sizeof(T);
  size_t vectors = 0;
  if constexpr (kWidth > 1) {
    struct alignas(16) Pack {
      T v[kWidth];
    };
    if ((all & 15) == 0) {
      vectors = n / kWidth;
      for (size_t k = threadIdx.x; k < vectors; k += blockDim.x) {
        Pack acc = load_cg(reinterpret_cast<const Pack*>(in[0]) + k);
        for (int q = 1; q < nin; ++q) {
          const Pack x = load_cg(reinterpret_cast<const Pack*>(in[q]) + k);
#pragma unroll
          for (int j = 0; j < kWidth; ++j) acc.v[j] = f(acc.v[j], x.v[j]);
        }
        reinterpret_cast<Pack*>(dst)[k] = acc;
      }
    }
  }
  for (size_t k = vectors * kWidth + threadIdx.x; k < n; k += blockDim.x) {
    T acc = load_cg(reinterpret_cast<const T*>(in[0]) + k);
    for (int q = 1; q < nin; ++q) acc = f(acc, load_cg(reinterpret_cast<const T*>(in[q]) + k));
    reinterpret_cast<T*>(dst)[k] = acc;
  }
}

__device__ uint8_t* slot(const LlCall& c, int owner, int parity, int sender) {
  return static_cast<uint8_t*>(c.regions[owner]) + c.region.data_offset(parity, sender);
}
__device__ uint64_t* key_slot(const LlCall& c, int owner, int parity, int sender) {
  auto* keys =
      reinterpret_cast<uint64_t*>(static_cast<uint8_t*>(c.regions[owner]) + c.region.keys_offset());
  return keys + c.region.key_index(parity, sender);
}
__device__ uint64_t* flag(const LlCall& c, int owner, int parity, int sender, unsigned segment) {
  auto* flags = reinterpret_cast<uint64_t*>(static_cast<uint8_t*>(c.regions[owner]) +
                                            c.region.flags_offset());
  return flags + c.region.flag_index(parity, sender, segment);
}

// The last block of the finish phase to end tells the host that the call is complete.
__device__ void signal_done(const LlCall& c, const LlSignal& sig) {
  __syncthreads();
  if (threadIdx.x != 0) return;
  __threadfence_system();
  if (atomicAdd(sig.arrivals, 1u) == gridDim.x - 1) {
    *sig.arrivals = 0;
    __threadfence_system();
    store_release(sig.done, c.seq);
  }
}

// Packed words: 4 data bytes and the low half of the call's sequence in one 8-byte store, which
// a reader sees whole or not at all. No fence, no separate flag: the data is its own flag.
__device__ uint64_t* packed_words(const LlCall& c, int owner, int parity, int sender) {
  return reinterpret_cast<uint64_t*>(slot(c, owner, parity, sender) + c.region.slot_bytes / 2);
}

__device__ uint32_t load_word(const uint8_t* src, size_t n) {  // n <= 4 bytes, any alignment
  if (n == 4 && (reinterpret_cast<uintptr_t>(src) & 3) == 0) {
    return *reinterpret_cast<const uint32_t*>(src);
  }
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint32_t>(src[i]) << (8 * i);
  return v;
}

__device__ void push_packed(const LlCall& c, int q, int parity, const uint8_t* src, size_t at,
                            size_t bytes) {
  uint64_t* words = packed_words(c, q, parity, c.rank) + at / 4;
  const uint64_t tag = static_cast<uint64_t>(static_cast<uint32_t>(c.seq)) << 32;
  for (size_t k = threadIdx.x; k * 4 < bytes; k += blockDim.x) {
    store_relaxed(words + k, tag | load_word(src + 4 * k, min(size_t(4), bytes - 4 * k)));
  }
}

// Waits for sender q's packed words of this segment and unpacks them into its slot, where the
// finish step reads every sender's data. False on timeout.
__device__ bool unpack(const LlCall& c, const LlSignal& sig, int q, int parity, size_t at,
                       size_t bytes) {
  const uint64_t* words = packed_words(c, c.rank, parity, q) + at / 4;
  auto* out = reinterpret_cast<uint32_t*>(slot(c, c.rank, parity, q) + at);
  const uint32_t tag = static_cast<uint32_t>(c.seq);
  for (size_t k = threadIdx.x; k * 4 < bytes; k += blockDim.x) {
    uint64_t v = load_relaxed(words + k);
    Patience waited(sig);
    for (unsigned spin = 0; static_cast<uint32_t>(v >> 32) != tag; ++spin) {
      if ((spin & 1023) == 1023 && waited.exhausted(c.timeout_ns)) return false;
      v = load_relaxed(words + k);
    }
    out[k] = static_cast<uint32_t>(v);
  }
  return true;
}

// Senders whose data this rank receives through its region: everyone else, and itself when
// push and finish are split.
__device__ bool through_region(const LlCall& c, int q) { return q != c.rank || c.split; }

// Block b owns segment b of every rank's data: it pushes it, and later finishes it.
template <typename T, typename F>
__global__ void __launch_bounds__(kLlThreads)
    ll_kernel(const LlCall c, int phases, const LlSignal sig, F f) {
  const unsigned b = blockIdx.x;
  const int parity = static_cast<int>(c.seq & 1);
  const size_t at = static_cast<size_t>(b) * c.segment_bytes;
  auto part = [&](int q) -> size_t {
    return at < c.bytes_to[q] ? min(c.segment_bytes, c.bytes_to[q] - at) : 0;
  };
  const auto* send = static_cast<const uint8_t*>(c.send);
  auto* recv = static_cast<uint8_t*>(c.recv);

  if (phases & kLlPush) {
    // The key first: a peer reads none of this call's data before it has compared it.
    if (b == 0 && static_cast<int>(threadIdx.x) < c.nranks &&
        static_cast<int>(threadIdx.x) != c.rank)
      store_release(key_slot(c, threadIdx.x, parity, c.rank), ll_key_word(c.seq, c.key));
    for (int q = 0; q < c.nranks; ++q) {
      if (!through_region(c, q) || !part(q)) continue;
      if (c.packed) {
        push_packed(c, q, parity, send + c.offset_to[q] + at, at, part(q));
      } else {
        block_copy(slot(c, q, parity, c.rank) + at, send + c.offset_to[q] + at, part(q));
      }
    }
    if (!c.packed) {
      __threadfence_system();
      __syncthreads();
      if (static_cast<int>(threadIdx.x) < c.nranks && static_cast<int>(threadIdx.x) != c.rank) {
        store_release(flag(c, threadIdx.x, parity, c.rank, b), c.seq);
      }
    }
  }
  if (!(phases & kLlFinish)) return;

  // ll_fault_word of the first peer found silent or making another call: 0 while none is.
  __shared__ unsigned long long fault;
  if (threadIdx.x == 0) fault = 0;
  __syncthreads();
  if (static_cast<int>(threadIdx.x) < c.nranks && static_cast<int>(threadIdx.x) != c.rank) {
    const int q = threadIdx.x;
    const uint64_t* theirs = key_slot(c, c.rank, parity, q);
    Patience waited(sig);
    uint64_t v = load_acquire(theirs);
    for (unsigned spin = 0; (v >> 32) != static_cast<uint32_t>(c.seq); ++spin) {
      if ((spin & 1023) == 1023 && waited.exhausted(c.timeout_ns)) break;
      v = load_acquire(theirs);
    }
    if ((v >> 32) != static_cast<uint32_t>(c.seq)) {
      atomicCAS(&fault, 0ull, ll_fault_word(LlFault::kSilent, q, 0));
    } else if (static_cast<uint32_t>(v) != c.key) {
      atomicCAS(&fault, 0ull, ll_fault_word(LlFault::kOtherCall, q, static_cast<uint32_t>(v)));
    }
  }
  __syncthreads();
  if (fault) {
    if (threadIdx.x == 0) *reinterpret_cast<volatile uint64_t*>(sig.fault) = fault;
    signal_done(c, sig);
    return;
  }
  if (c.packed) {
    for (int q = 0; q < c.nranks; ++q) {
      // What every sender sends this rank: its block (reduce-scatter) or the equal share.
      const size_t mine = part(c.rank);
      if (through_region(c, q) && mine && !unpack(c, sig, q, parity, at, mine)) {
        atomicCAS(&fault, 0ull, ll_fault_word(LlFault::kSilent, q, 0));
      }
    }
  } else if (static_cast<int>(threadIdx.x) < c.nranks && static_cast<int>(threadIdx.x) != c.rank) {
    const int q = threadIdx.x;
    const uint64_t* mine = flag(c, c.rank, parity, q, b);
    Patience waited(sig);
    for (unsigned spin = 0; load_acquire(mine) < c.seq; ++spin) {
      if ((spin & 1023) == 1023 && waited.exhausted(c.timeout_ns)) {
        atomicCAS(&fault, 0ull, ll_fault_word(LlFault::kSilent, q, 0));
        break;
      }
    }
  }
  __syncthreads();
  if (fault) {
    if (threadIdx.x == 0) *reinterpret_cast<volatile uint64_t*>(sig.fault) = fault;
    signal_done(c, sig);
    return;
  }

  const uint8_t* in[kLlMaxRanks];
  switch (c.kind) {
    case CollKind::kAllgather:
      for (int p = 0; p < c.nranks; ++p) {
        if (p == c.rank && c.inplace) continue;
        const uint8_t* src = p == c.rank ? send + at : slot(c, c.rank, parity, p) + at;
        block_copy(recv + p * c.bytes_to[p] + at, src, part(p));
      }
      break;
    case CollKind::kAllreduce:
    case CollKind::kReduceScatter:
      if (!part(c.rank)) break;
      for (int p = 0; p < c.nranks; ++p) {
        in[p] = through_region(c, p) ? slot(c, c.rank, parity, p) + at : send + c.offset_to[p] + at;
      }
      block_reduce<T>(recv + at, in, c.nranks, part(c.rank), f);
      break;
    default:
      break;
  }
  signal_done(c, sig);
}

template <typename T, typename F>
Status launch(const LlCall& c, int phases, const LlSignal& sig, F f, cudaStream_t stream) {
  ll_kernel<T><<<c.segments, kLlThreads, 0, stream>>>(c, phases, sig, f);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return Status(Code::kCuda,
                  std::string("low-latency kernel launch: ") + cudaGetErrorString(err));
  }
  return Status::ok();
}

}  // namespace

Status ll_launch(const LlCall& call, int phases, const LlSignal& sig, void* stream) {
  if (call.segments == 0) return Status::ok();
  auto s = static_cast<cudaStream_t>(stream);
  if (call.kind == CollKind::kAllgather) {
    return launch<uint8_t>(call, phases, sig, reduce_ops::Bor<uint8_t>(), s);
  }
  return reduce_ops::with_reduction(call.dtype, call.op, [&](auto* tag, auto f) -> Status {
    using T = std::remove_pointer_t<decltype(tag)>;
    return launch<T>(call, phases, sig, f, s);
  });
}

}  // namespace efacoll

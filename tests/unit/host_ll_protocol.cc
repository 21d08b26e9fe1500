#include "host_ll_protocol.h"

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/host_reduce.h"

namespace efacoll {
namespace testing {
namespace {

uint8_t* slot(const LlCall& c, int owner, int parity, int sender) {
  return static_cast<uint8_t*>(c.regions[owner]) + c.region.data_offset(parity, sender);
}
uint64_t* key_slot(const LlCall& c, int owner, int parity, int sender) {
  return reinterpret_cast<uint64_t*>(static_cast<uint8_t*>(c.regions[owner]) +
                                     c.region.keys_offset()) +
         c.region.key_index(parity, sender);
}
// One flag per sender (segment 0): this thread moves the whole message at once.
uint64_t* flag(const LlCall& c, int owner, int parity, int sender) {
  return reinterpret_cast<uint64_t*>(static_cast<uint8_t*>(c.regions[owner]) +
                                     c.region.flags_offset()) +
         c.region.flag_index(parity, sender, 0);
}
bool through_region(const LlCall& c, int q) { return q != c.rank || c.split; }

// Spins, then yields, then sleeps: ranks and their threads share the test machine's cores.
class Waiter {
 public:
  explicit Waiter(uint64_t timeout_ns)
      : deadline_(std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeout_ns)) {}
  bool expired() {
    if (++spins_ < 64) return false;
    if (spins_ < 1024) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    return std::chrono::steady_clock::now() > deadline_;
  }

 private:
  std::chrono::steady_clock::time_point deadline_;
  unsigned spins_ = 0;
};

Status silent(const LlCall& c, int peer) {
  return Status(Code::kTimeout, "rank " + std::to_string(peer) +
                                    " did not send its data (low-latency protocol, call " +
                                    std::to_string(c.seq) + ")");
}

}  // namespace

Status run_ll_on_host(const LlCall& c, LlFault* fault) {
  if (c.segments == 0) return Status::ok();
  const int parity = static_cast<int>(c.seq & 1);
  const auto* send = static_cast<const uint8_t*>(c.send);
  auto* recv = static_cast<uint8_t*>(c.recv);
  // The key first, then the data, then the flags: as the kernel orders them.
  for (int q = 0; q < c.nranks; ++q) {
    if (q != c.rank)
      __atomic_store_n(key_slot(c, q, parity, c.rank), ll_key_word(c.seq, c.key), __ATOMIC_RELEASE);
  }
  for (int q = 0; q < c.nranks; ++q) {
    if (through_region(c, q) && c.bytes_to[q])
      std::memcpy(slot(c, q, parity, c.rank), send + c.offset_to[q], c.bytes_to[q]);
  }
  for (int q = 0; q < c.nranks; ++q) {
    if (q != c.rank) __atomic_store_n(flag(c, q, parity, c.rank), c.seq, __ATOMIC_RELEASE);
  }
  Waiter waiter(c.timeout_ns);
  for (int q = 0; q < c.nranks; ++q) {
    if (q == c.rank) continue;
    uint64_t key = 0;
    while (((key = __atomic_load_n(key_slot(c, c.rank, parity, q), __ATOMIC_ACQUIRE)) >> 32) !=
           static_cast<uint32_t>(c.seq)) {
      if (waiter.expired()) return silent(c, q);
    }
    if (static_cast<uint32_t>(key) != c.key) {
      fault->kind = LlFault::kOtherCall;
      fault->peer = q;
      fault->their_key = static_cast<uint32_t>(key);
      return Status(Code::kMismatch,
                    "rank " + std::to_string(q) + " made another call (low-latency protocol)");
    }
  }
  for (int q = 0; q < c.nranks; ++q) {
    if (q == c.rank) continue;
    while (__atomic_load_n(flag(c, c.rank, parity, q), __ATOMIC_ACQUIRE) < c.seq) {
      if (waiter.expired()) return silent(c, q);
    }
  }
  if (c.kind == CollKind::kAllgather) {
    for (int p = 0; p < c.nranks; ++p) {
      if (p == c.rank && c.inplace) continue;
      const uint8_t* src = p == c.rank ? send : slot(c, c.rank, parity, p);
      std::memmove(recv + p * c.bytes_to[p], src, c.bytes_to[p]);
    }
    return Status::ok();
  }
  // Allreduce and reduce-scatter: in rank order, into a copy, since in place the receive buffer
  // is also this rank's input.
  const size_t bytes = c.bytes_to[c.rank];
  if (bytes == 0) return Status::ok();
  auto input = [&](int p) -> const uint8_t* {
    return through_region(c, p) ? slot(c, c.rank, parity, p) : send + c.offset_to[p];
  };
  std::vector<uint8_t> acc(input(0), input(0) + bytes);
  const size_t count = bytes / dtype_size(c.dtype);
  for (int p = 1; p < c.nranks; ++p) {
    EFACOLL_RETURN_IF_ERROR(host_reduce(acc.data(), acc.data(), input(p), count, c.dtype, c.op));
  }
  std::memcpy(recv, acc.data(), bytes);
  return Status::ok();
}

}  // namespace testing
}  // namespace efacoll

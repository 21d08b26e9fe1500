// A Schedule is one rank's part of a collective: a DAG of sends, receives, reductions and copies
// over three buffers. Algorithms build schedules; the executor runs them; neither knows the other.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace efacoll {

enum class BufId : uint8_t { kSend, kRecv, kScratch, kStage };

struct BufRef {
  BufId buf = BufId::kSend;
  size_t offset = 0;  // bytes
};

enum class OpKind : uint8_t { kSend, kRecv, kReduce, kCopy };

struct Op {
  Op() = default;
  explicit Op(OpKind k) : kind(k) {}

  OpKind kind = OpKind::kCopy;
  int peer = -1;        // communicator rank (send/recv)
  uint32_t msg_id = 0;  // with the sender's rank, unique inside one collective
  uint32_t step = 0;    // algorithm step, for error messages and tracing
  size_t bytes = 0;
  BufRef dst;   // recv, reduce, copy
  BufRef src;   // send, reduce (first operand), copy
  BufRef src2;  // reduce (second operand)
};

struct Schedule {
  std::vector<Op> ops;
  std::vector<std::vector<uint32_t>> successors;
  std::vector<uint32_t> num_deps;
  size_t scratch_bytes = 0;
  // For TRACE lines: the registry's name of the algorithm that built it (coll/registry.h).
  const char* algorithm = "";

  uint32_t add(const Op& op);
  // `after` may start only once `before` has completed. `before` must be listed first (a lower
  // index): where the transport's provider needs_posting_order (ProviderQuirks), the executor posts
  // each peer's operations in list order, and an operation held behind one that depends on it would
  // wait for good.
  void depend(uint32_t before, uint32_t after);
  std::string describe() const;  // one line per op, for TRACE and test failures
};

// Message ids are 20 bits in the tag (see transport/tag.h); the top 4096 are the notices'.
constexpr uint32_t kMaxMsgId = 0xff000 - 1;

}  // namespace efacoll

// Pinned host slots through which GPU data crosses a provider without FI_HMEM. A staged call
// holds one set from its start to its end; under MPI_THREAD_MULTIPLE calls on different
// communicators run at once (each lends the engine's lock while it waits for peers), so there
// are as many sets as staged calls were ever under way together. Used under the engine's lock,
// which acquire() lends while it allocates.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "efacoll/status.h"

namespace efacoll {

struct StageSet {
  void* ptr = nullptr;
  size_t bytes = 0;
  uint64_t id = 0;  // the registration cache's name for this memory
  bool busy = false;
};

class StagePool {
 public:
  struct Memory {
    std::function<Status(size_t bytes, void** out)> alloc;
    std::function<void(void* ptr, size_t bytes)> free;  // under the engine's lock
    std::function<uint64_t()> next_id;        // a fresh identity (the engine's allocation ids)
    std::function<void(uint64_t id)> forget;  // drops a cached registration of freed memory
  };
  explicit StagePool(Memory memory) : memory_(std::move(memory)) {}
  ~StagePool();
  StagePool(const StagePool&) = delete;
  StagePool& operator=(const StagePool&) = delete;

  // A set of at least `bytes` that no other call holds, until release() or retire(): the
  // smallest free one that is large enough, else the largest free one grown, else a new one.
  // A set that grows or is made is allocated with `lend` lent (the call's lock, or nullptr), so
  // that other threads' calls go on meanwhile.
  Status acquire(size_t bytes, StageSet** out, std::unique_lock<std::mutex>* lend = nullptr);
  void release(StageSet* stage) { stage->busy = false; }
  // Late writes may still reach it (comm_late_writes.cc): out of the pool, its memory the
  // caller's to free once they have come.
  void* retire(StageSet* stage);
  size_t sets() const { return stages_.size(); }

 private:
  void remove(StageSet* stage);  // out of the pool; its memory is not freed

  Memory memory_;
  std::vector<std::unique_ptr<StageSet>> stages_;
};

}  // namespace efacoll

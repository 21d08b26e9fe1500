#include "engine/stage_pool.h"

#include <algorithm>

#include "engine/lock_lent.h"

namespace efacoll {

StagePool::~StagePool() {
  for (auto& s : stages_) memory_.free(s->ptr, s->bytes);
}

Status StagePool::acquire(size_t bytes, StageSet** out, std::unique_lock<std::mutex>* lend) {
  StageSet* fits = nullptr;
  StageSet* largest = nullptr;
  for (auto& s : stages_) {
    if (s->busy) continue;
    if (s->bytes >= bytes && (!fits || s->bytes < fits->bytes)) fits = s.get();
    if (!largest || s->bytes > largest->bytes) largest = s.get();
  }
  StageSet* stage = fits;
  if (!stage) {
    if (largest) {
      memory_.forget(largest->id);
      memory_.free(largest->ptr, largest->bytes);
      largest->ptr = nullptr;
      largest->bytes = 0;
      stage = largest;
    } else {
      stages_.push_back(std::make_unique<StageSet>());
      stage = stages_.back().get();
    }
    // Taken before the lock is lent: no other call takes it meanwhile.
    stage->busy = true;
    void* made = nullptr;
    Status st;
    {
      LockLent lent(lend);
      st = memory_.alloc(bytes, &made);
    }
    if (!st.is_ok()) {
      remove(stage);
      return st;
    }
    stage->ptr = made;
    stage->bytes = bytes;
    stage->id = memory_.next_id();
  }
  stage->busy = true;
  *out = stage;
  return Status::ok();
}

void StagePool::remove(StageSet* stage) {
  stages_.erase(std::find_if(stages_.begin(), stages_.end(),
                             [stage](const auto& s) { return s.get() == stage; }));
}

void* StagePool::retire(StageSet* stage) {
  void* ptr = stage->ptr;
  remove(stage);
  return ptr;
}

}  // namespace efacoll

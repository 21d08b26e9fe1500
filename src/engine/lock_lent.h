// A call's lock lent out for one wait that touches none of the engine's state, so that other
// threads' calls go on meanwhile: a low-latency kernel waiting for its peers, or a CUDA
// allocation. (Frees wait for the whole device, a kernel waiting for peers included, whatever
// the lock: the engine makes them only between such kernels, engine/gpu_memory_to_free.h.)
#pragma once
#include <mutex>

namespace efacoll {

class LockLent {
 public:
  // lock: CommCore::lendable_lock(), nullptr where there is nothing to lend.
  explicit LockLent(std::unique_lock<std::mutex>* lock) : lock_(lock) {
    if (lock_) lock_->unlock();
  }
  ~LockLent() {
    if (lock_) lock_->lock();
  }
  LockLent(const LockLent&) = delete;
  LockLent& operator=(const LockLent&) = delete;

 private:
  std::unique_lock<std::mutex>* lock_;
};

}  // namespace efacoll

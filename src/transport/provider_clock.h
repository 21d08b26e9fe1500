// How long the provider has held a thread. EFACOLL_TIMEOUT is checked between provider calls,
// so a call that never returns (a livelock inside the provider) would hold its collective
// forever; the engine's watchdog reads these clocks and stops such a process (engine.h).
#pragma once
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstdint>

namespace efacoll {

struct ProviderCall {
  const char* what = nullptr;  // the libfabric function: a string literal
  std::chrono::steady_clock::time_point since;
  pthread_t thread{};  // the thread the provider holds
};

class ProviderClock {
  struct Slot {
    std::atomic<int64_t> since{0};  // steady-clock ticks; 0: free
    std::atomic<const char*> what{nullptr};
    std::atomic<pthread_t> thread{};
  };

 public:
  // Marks a provider call for its scope: one compare-and-swap and one clock read. With more
  // threads inside the provider at once than there are slots, the extra calls go unmarked.
  class Scope {
   public:
    Scope(ProviderClock& clock, const char* what) {
      const int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
      for (Slot& s : clock.slots_) {
        int64_t free = 0;
        if (s.since.compare_exchange_strong(free, now, std::memory_order_acq_rel)) {
          s.what.store(what, std::memory_order_release);
          s.thread.store(pthread_self(), std::memory_order_release);
          slot_ = &s;
          return;
        }
      }
    }
    ~Scope() {
      if (slot_) slot_->since.store(0, std::memory_order_release);
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Slot* slot_ = nullptr;
  };

  // The marked call that has been inside the provider longest; false when none is.
  bool oldest(ProviderCall* out) const {
    int64_t oldest = 0;
    for (const Slot& s : slots_) {
      const int64_t since = s.since.load(std::memory_order_acquire);
      if (since == 0 || (oldest != 0 && since >= oldest)) continue;
      oldest = since;
      out->what = s.what.load(std::memory_order_acquire);
      out->thread = s.thread.load(std::memory_order_acquire);
      out->since =
          std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(since));
    }
    return oldest != 0;
  }

 private:
  Slot slots_[16];
};

}  // namespace efacoll

// Zero-byte sends (notices) that a failed call could not post before returning: the provider
// turned them away (a queue full, or tcp;ofi_rxm still connecting to that peer) for longer than
// the call waits after a timeout. The engine posts them later, from its idle progress and at
// the start of its next calls, until each is posted or its deadline passes. Without this the
// peers that needed the news waited out their own timeouts. Also notices sent again, not before
// a given time, to a peer whose link the call found broken (PeerWatch::tell_again_later).
#pragma once
#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>

#include "transport/transport.h"

namespace efacoll {

class LateSends {
 public:
  using Clock = std::chrono::steady_clock;
  // How long a notice the provider turned away is tried at least, whatever the rank's own
  // timeout: its peers may wait longer than it (their own EFACOLL_TIMEOUT), and tcp;ofi_rxm,
  // still connecting to a peer the rank had not yet sent to, turned notices away for over a
  // second under ThreadSanitizer (its queue full to that peer), past a 1 s timeout.
  static constexpr std::chrono::seconds kTriedAtLeast{10};
  explicit LateSends(Transport* transport) : transport_(transport) {}
  LateSends(const LateSends&) = delete;
  LateSends& operator=(const LateSends&) = delete;
  // Sends still held by the provider stay allocated: it may complete them later.
  ~LateSends();

  void add(PeerAddr to, uint64_t tag, uint32_t call_seq, Clock::time_point deadline,
           Clock::time_point not_before = Clock::time_point());
  // Posts what the provider now takes, drops what is past its deadline. Cheap when empty.
  void retry();
  // Before the transport closes: posts what is still due (each once its not-before time comes)
  // and progresses the provider until all of it completes, for `at_most` at most. Without it, a
  // process that ends soon after a failed call, or whose idle progress is off, never sends the
  // notice it was to send again, and its peers wait out their own timeouts.
  void flush(Clock::duration at_most);

 private:
  struct Send : Completion {
    PeerAddr to{};
    Clock::time_point deadline;
    Clock::time_point not_before;
    bool posted = false;
    std::atomic<bool> done{false};  // set in the provider's progress, perhaps another call's
  };
  static void on_done(Completion* c, const Status& status, size_t bytes);

  Transport* transport_;
  std::mutex mutex_;
  std::deque<std::unique_ptr<Send>> sends_;
  std::atomic<size_t> count_{0};  // sends_ not yet done
};

}  // namespace efacoll

// Each communicator's efacoll calls run in the order the rank made them, blocking and nonblocking
// alike (MPI matches a communicator's collectives in call order on every rank). A nonblocking
// call's work goes to the communicator's own worker thread, which runs the engine's blocking call
// (so the call progresses while the caller computes, without it entering MPI); a blocking call
// made while earlier ones are queued waits its turn. One worker per communicator, not one for
// all: ranks may start nonblocking calls on different communicators in different orders, and
// one queue would then hold each rank's next call behind one its peers have not reached.
// The worker makes no MPI call (the engine's communicator is set up by the caller first), so
// this holds at every MPI thread level. Owned by the communicator's cache entry
// (shim_comm_cache.cc), which drains it before the engine's communicator goes.
#pragma once
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "efacoll/status.h"

namespace efacoll {
namespace shim {

// One call's work, run on a worker (or inline), and its result.
struct PendingCall {
  std::function<Status()> work;  // released once it ran (its captured copies with it)
  Status status;                 // valid once done
  std::atomic<bool> done{false};
  void run();  // no exception leaves it
};

class CallQueue {
 public:
  CallQueue();
  ~CallQueue();  // runs every queued call first
  CallQueue(const CallQueue&) = delete;
  CallQueue& operator=(const CallQueue&) = delete;

  void submit(std::shared_ptr<PendingCall> call);
  // `work` after every call queued before it: inline where none is queued or running.
  Status run_in_order(const std::function<Status()>& work);
  bool busy();  // calls queued or running

 private:
  void work();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<PendingCall>> queued_;  // guarded by mutex_
  bool running_ = false;                             // guarded by mutex_
  bool closing_ = false;                             // guarded by mutex_
  std::thread worker_;                               // last: started once the rest exists
};

}  // namespace shim
}  // namespace efacoll

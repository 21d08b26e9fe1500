#include "core/executor.h"
#include "mpi_shim/call_queue.h"

namespace efacoll {
namespace shim {

void PendingCall::run() {
  Status st;
  try {
    st = work();
  } catch (const std::exception& e) {
    st = Status(Code::kInternal, std::string("exception: ") + e.what());
  } catch (...) {
    st = Status(Code::kInternal, "unknown exception");
  }
  work = nullptr;
  status = st;
  done.store(true, std::memory_order_release);
}

CallQueue::CallQueue() : worker_([this] { work(); }) {}

CallQueue::~CallQueue() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closing_ = true;
  }
  wake_.notify_all();
  worker_.join();
}

void CallQueue::submit(std::shared_ptr<PendingCall> call) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queued_.push_back(std::move(call));
  }
  wake_.notify_all();
}

bool CallQueue::busy() {
  std::lock_guard<std::mutex> lock(mutex_);
  return !queued_.empty() || running_;
}

Status CallQueue::run_in_order(const std::function<Status()>& work) {
  if (!busy()) return work();
  auto call = std::make_shared<PendingCall>();
  call->work = work;
  submit(call);
  IdleBackoff backoff;
  while (!call->done.load(std::memory_order_acquire)) backoff.idle();
  return call->status;
}

void CallQueue::work() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return closing_ || !queued_.empty(); });
    if (queued_.empty()) return;  // closing, and every queued call ran
    std::shared_ptr<PendingCall> call = std::move(queued_.front());
    queued_.pop_front();
    running_ = true;
    lock.unlock();
    call->run();
    lock.lock();
    running_ = false;
  }
}

}  // namespace shim
}  // namespace efacoll

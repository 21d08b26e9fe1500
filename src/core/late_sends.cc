#include "core/late_sends.h"

#include <thread>

#include "common/kept_alive.h"
#include "common/log.h"

namespace efacoll {

LateSends::~LateSends() {
  for (auto& s : sends_) {
    if (s->posted && !s->done) {
      s->fn = [](Completion*, const Status&, size_t) {};
      keep_alive(std::move(s));
    }
  }
}

void LateSends::add(PeerAddr to, uint64_t tag, uint32_t call_seq, Clock::time_point deadline,
                    Clock::time_point not_before) {
  auto s = std::make_unique<Send>();
  s->fn = &LateSends::on_done;
  s->tag = tag;
  s->call_seq = call_seq;
  s->to = to;
  s->deadline = deadline;
  s->not_before = not_before;
  std::lock_guard<std::mutex> lock(mutex_);
  sends_.push_back(std::move(s));
  ++count_;
}

void LateSends::on_done(Completion* c, const Status& status, size_t) {
  auto* s = static_cast<Send*>(c);
  if (!status.is_ok())
    EFACOLL_TRACE(kNet, "a late notice was not delivered: %s", status.message().c_str());
  s->done = true;
}

void LateSends::retry() {
  if (count_.load(std::memory_order_relaxed) == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const auto now = Clock::now();
  for (auto& s : sends_) {
    if (s->posted || s->done) continue;
    if (now >= s->deadline) {
      s->done = true;
      continue;
    }
    if (now < s->not_before) continue;
    const Status st = transport_->send(s->to, nullptr, 0, s->tag, nullptr, s.get());
    if (st.is_ok()) {
      s->posted = true;
    } else if (st.code() != Code::kAgain) {
      EFACOLL_TRACE(kNet, "a late notice was not sent: %s", st.message().c_str());
      s->done = true;
    }
  }
  while (!sends_.empty() && sends_.front()->done) {
    sends_.pop_front();
    --count_;
  }
}

void LateSends::flush(Clock::duration at_most) {
  const auto until = Clock::now() + at_most;
  while (count_.load() > 0 && Clock::now() < until) {
    retry();
    int completed = 0;
    // An error entry of one operation says nothing of the others: the time bound ends the wait.
    const Status st = transport_->progress(&completed);
    if (!st.is_ok()) EFACOLL_TRACE(kNet, "progress at close: %s", st.message().c_str());
    // Mostly a wait for a notice's time to come (up to 200 ms): a millisecond's sleep is soon
    // enough, where the executor's backoff would wake thousands of times.
    if (completed == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace efacoll

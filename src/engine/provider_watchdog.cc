// The engine's watchdog: EFACOLL_TIMEOUT is checked between calls into the provider, so a call
// that never returns (seen once: a livelock inside udp;ofi_rxd's progress) would hold its
// collective, and the job, forever. A thread that cannot be given back cannot fail its call
// with an error either; the process stops instead, saying why, and mpirun ends the job.
#include <pthread.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "common/log.h"
#include "engine/engine_core.h"
#include "transport/transport.h"

namespace efacoll {
namespace {

constexpr uint64_t kStarted = uint64_t(1) << 63;

}  // namespace

// One relaxed store per call: with threads on several communicators the last to start wins,
// and the message says "last started", not "the one stuck".
void EngineCore::note_call_started(CollKind kind, uint32_t comm_id, uint32_t seq) {
  last_started_.store(kStarted | (static_cast<uint64_t>(kind) & 0xff) << 48 |
                          (static_cast<uint64_t>(comm_id) & 0xffff) << 32 | seq,
                      std::memory_order_relaxed);
}

// Looks a few times a timeout (8), so that a stuck call is reported at most an eighth of the
// timeout late. Woken far later than it asked, the watchdog takes it that the whole process was
// stopped (SIGSTOP, a debugger, a suspended job), the held call with it: only the time after
// that counts against the call, so that resuming does not abort it.
void EngineCore::watchdog_loop() {
  using std::chrono::steady_clock;
  const steady_clock::duration every = std::clamp<steady_clock::duration>(
      config_.timeout / 8, std::chrono::milliseconds(10), std::chrono::seconds(1));
  auto looked = steady_clock::now();
  steady_clock::time_point counted_from;  // no stop seen: all of a call's time counts
  std::unique_lock<std::mutex> lock(watchdog_mutex_);
  while (!watchdog_wake_.wait_for(lock, every, [this] { return stopping_.load(); })) {
    const auto now = steady_clock::now();
    if (now - looked > every + std::chrono::seconds(1)) counted_from = now;
    looked = now;
    watch_provider_calls(now, counted_from);
  }
}

void EngineCore::watch_provider_calls(std::chrono::steady_clock::time_point now,
                                      std::chrono::steady_clock::time_point counted_from) {
  ProviderCall call;
  if (stuck_reported_ || !transport_->oldest_provider_call(&call)) return;
  const auto held = now - std::max(call.since, counted_from);
  if (held <= config_.timeout || held <= config_.stuck_provider_min) return;
  stuck_reported_ = true;
  char last[128] = "none";
  const uint64_t started = last_started_.load(std::memory_order_relaxed);
  if (started & kStarted) {
    std::snprintf(last, sizeof(last), "%s on communicator %u (call %u)",
                  coll_name(static_cast<CollKind>((started >> 48) & 0xff)),
                  static_cast<unsigned>((started >> 32) & 0xffff),
                  static_cast<unsigned>(started & 0xffffffff));
  }
  char message[512];
  std::snprintf(message, sizeof(message),
                "%s of provider %s has not returned for %.1f s (EFACOLL_TIMEOUT %lld s): no "
                "timeout can fire while the provider holds the thread, so efacoll stops this "
                "process; the last collective started here: %s",
                call.what ? call.what : "a call", transport_->info().provider.c_str(),
                std::chrono::duration<double>(held).count(),
                static_cast<long long>(config_.timeout.count() / 1000), last);
  if (config_.on_stuck_provider) {
    config_.on_stuck_provider(message);
    return;
  }
  // Said whatever EFACOLL_DEBUG is: the process is about to end.
  log_write(LogLevel::kError, kNet, "%s", message);
  // Aborted on the held thread, so that the backtrace a handler prints (Open MPI's) and a core
  // file's first thread show where in the provider it is stuck. Here, if that thread's handler
  // returned or it blocks the signal.
  if (call.thread != pthread_t{}) {
    pthread_kill(call.thread, SIGABRT);
    std::this_thread::sleep_for(std::chrono::seconds(5));
  }
  std::abort();
}

}  // namespace efacoll

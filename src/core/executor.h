// Runs one rank's Schedule over a Transport: posts every operation whose dependencies are met
// (where the transport's provider needs_posting_order (ProviderQuirks), once the ones listed before
// it with the same peer and direction are posted too), progresses completions, and yields the CPU
// when nothing moves.
#pragma once
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "core/local_ops.h"
#include "core/schedule.h"
#include "efacoll/status.h"
#include "efacoll/types.h"
#include "transport/transport.h"

namespace efacoll {

struct ExecBuffers {
  const void* send = nullptr;
  void* recv = nullptr;
  void* scratch = nullptr;
  void* stage = nullptr;  // host bounce slots (staged GPU data)
  // Registrations, where the transport needs them.
  const MemRegion* send_mr = nullptr;
  const MemRegion* recv_mr = nullptr;
  const MemRegion* scratch_mr = nullptr;
  const MemRegion* stage_mr = nullptr;
  // Which buffers are GPU memory (the stage never is).
  bool send_on_gpu = false, recv_on_gpu = false, scratch_on_gpu = false;
};

class LateSends;

struct ExecContext {
  Transport* transport = nullptr;
  LocalOps* local = nullptr;
  const std::vector<PeerAddr>* peers = nullptr;  // by communicator rank
  int rank = 0;
  uint32_t comm_id = 0;
  uint32_t seq = 0;
  DType dtype = DType::kByte;
  ROp op = ROp::kSum;
  uint32_t signature = 0;  // call_signature(): carried by every message, checked on arrival
  uint64_t count = 0;      // the element count the signature was made of (call cards carry it)
  // Fails when no operation completes for this long.
  std::chrono::milliseconds timeout{300000};
  size_t max_posted = SIZE_MAX;  // sends and receives in flight at once (TransportInfo)
  std::string what;              // "allreduce on communicator 3", for error messages
  // Called each time the call looks at its peers after waiting (every EFACOLL_TIMEOUT / 16, at
  // most 100 ms): what else the caller knows of its peers. An error ends the call.
  std::function<Status()> on_stall;
  // Held by the caller around the run; released while waiting for peers, so that collectives
  // of other threads on other communicators (MPI_THREAD_MULTIPLE) can move meanwhile: their
  // peers may be the ones we wait for. nullptr: held throughout.
  std::unique_lock<std::mutex>* yield_lock = nullptr;
  // Where notices the provider still turns away when a failed call returns are left to be
  // posted later (nullptr: they are dropped).
  LateSends* late_sends = nullptr;
  // Where a failed call adds the buffers (bits 1 << BufId) that may still be written after it
  // returns: receives the provider would not give back, and canceled one-sided receives whose
  // senders may hold their clear-to-sends (Completion::may_still_be_written). The caller must
  // not reuse them: a late write lands whenever it comes, and EFA keeps no order.
  unsigned* late_write_targets = nullptr;
  // GPUs before Hopper (A100 on p4d) may hold GPUDirect writes from the NIC where a kernel does
  // not yet see them, as aws-ofi-nccl flushes for: where set, called after a receive landed in
  // GPU memory, before the next local operation and before the call returns.
  std::function<Status()> flush_network_writes;
};

Status execute_schedule(const Schedule& schedule, const ExecContext& ctx, const ExecBuffers& bufs);

// Backs off from spinning to yielding to short sleeps, so that ranks sharing cores progress.
// Time-based: a wait of microseconds (the next chunk, a peer one hop away) only yields; a long
// wait (a late peer) sleeps instead of burning a core.
class IdleBackoff {
 public:
  void reset() { idle_ = 0; }
  void idle();

 private:
  unsigned idle_ = 0;
  std::chrono::steady_clock::time_point since_;
};

// A pass of a wait loop takes microseconds. One that took over a second, waits for the
// engine's lock aside, found the process stopped (SIGSTOP, a debugger, a suspended job), and the
// peers' silence during the stop was not theirs (in the executor's wait, and in the set-up
// exchange of a communicator's first call: mpi_shim/shim_comm_cache.cc). One stop a timeout is
// forgiven, no more, so that a provider whose calls keep taking seconds still times out.
class StopForgiveness {
  using Clock = std::chrono::steady_clock;

 public:
  explicit StopForgiveness(Clock::duration timeout) : timeout_(timeout) {}
  void pass_begins() {
    began_ = Clock::now();
    locked_ = {};
  }
  void waited_for_lock(Clock::duration d) { locked_ += d; }
  // The time of this pass to leave out of the peers' silence: zero unless it was a stop.
  Clock::duration forgiven(Clock::time_point now) {
    const Clock::duration pass = now - began_ - locked_;
    if (pass < std::chrono::seconds(1) || now - forgiven_at_ < timeout_) return {};
    forgiven_at_ = began_ = now;
    return pass;
  }

 private:
  Clock::duration timeout_;
  Clock::time_point began_, forgiven_at_;
  Clock::duration locked_{};
};

}  // namespace efacoll

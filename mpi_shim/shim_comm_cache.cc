// Engine communicators cached on MPI communicators with an attribute: created on first use,
// freed by the attribute's delete callback (MPI_Comm_free) or at MPI_Finalize.
#include <cstring>
#include <set>
#include <vector>

#include "common/kept_alive.h"
#include "common/log.h"
#include "core/executor.h"
#include "mpi_shim/call_queue.h"
#include "mpi_shim/shim.h"

namespace efacoll {
namespace shim {
namespace {

// The members' exchange runs through the host MPI. Nonblocking and under EFACOLL_TIMEOUT like
// every other wait, so that a rank whose peers never make this call (one skipped it, or went
// on to MPI_Finalize) gets an error instead of waiting as long as MPI would.
class MpiBootstrap : public Bootstrap {
 public:
  MpiBootstrap(MPI_Comm comm, std::chrono::milliseconds timeout) : comm_(comm), timeout_(timeout) {
    PMPI_Comm_rank(comm, &rank_);
    PMPI_Comm_size(comm, &size_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool abandoned() const { return abandoned_; }
  Status allgather(const void* in, size_t bytes, void* out) override {
    // MPI's own copies: a pending collective can neither be canceled nor freed, so on a
    // timeout these stay for MPI to finish with, while the caller's buffers go.
    auto mine = std::make_unique<std::vector<uint8_t>>(static_cast<const uint8_t*>(in),
                                                       static_cast<const uint8_t*>(in) + bytes);
    auto all = std::make_unique<std::vector<uint8_t>>(bytes * size_);
    MPI_Request request = MPI_REQUEST_NULL;
    int rc = PMPI_Iallgather(mine->data(), static_cast<int>(bytes), MPI_BYTE, all->data(),
                             static_cast<int>(bytes), MPI_BYTE, comm_, &request);
    if (rc != MPI_SUCCESS) return Status(Code::kInternal, "bootstrap PMPI_Iallgather failed");
    const Status st = wait_within(&request, timeout_);
    if (st.is_ok()) {
      std::memcpy(out, all->data(), all->size());
      return st;
    }
    if (st.code() != Code::kTimeout) return st;
    // MPI may still write them: kept reachable to the end.
    keep_alive(std::move(mine));
    keep_alive(std::move(all));
    abandoned_ = true;
    return Status(Code::kTimeout,
                  "efacoll's set-up of this communicator: not every member "
                  "joined within EFACOLL_TIMEOUT (" +
                      std::to_string(timeout_.count() / 1000) +
                      " s); one skipped this call, made another collective, or "
                      "finalized");
  }

 private:
  MPI_Comm comm_;
  std::chrono::milliseconds timeout_;
  int rank_ = 0, size_ = 0;
  bool abandoned_ = false;
};

struct Cached {
  MPI_Comm comm;
  std::unique_ptr<Comm> engine_comm;  // null: set-up failed, this communicator uses MPI...
  // ...unless set-up was given up on with MPI's exchange still pending: then every later call
  // fails too, since a call passed to MPI could match that exchange on a late member.
  Status abandoned;
  // Its calls' order and its nonblocking calls' worker (made by the first such call). Declared
  // after engine_comm, so destroyed first: every queued call runs before the communicator goes.
  std::unique_ptr<CallQueue> queue;
};

std::set<Cached*>& live() {
  static auto* s = new std::set<Cached*>();
  return *s;
}

// Guards live(): threads create and free communicators at once under MPI_THREAD_MULTIPLE. Taken
// only then, and only when a communicator comes or goes, never per call.
std::unique_lock<std::mutex> live_lock() {
  static auto* m = new std::mutex();
  return lock_if_threads<std::unique_lock<std::mutex>>(*m);
}

int delete_cached(MPI_Comm, int, void* value, void*) {
  auto* c = static_cast<Cached*>(value);
  {
    auto lock = live_lock();
    live().erase(c);
  }
  delete c;  // the engine communicator takes the engine's lock itself
  return MPI_SUCCESS;
}

}  // namespace

Status wait_within(MPI_Request* request, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  IdleBackoff backoff;
  // A stop of this process (SIGSTOP, a debugger) while it waits is not the members' lateness.
  StopForgiveness stops(timeout);
  stops.pass_begins();
  for (;;) {
    int done = 0;
    if (PMPI_Test(request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      return Status(Code::kInternal, "PMPI_Test failed");
    if (done) return Status::ok();
    const auto now = std::chrono::steady_clock::now();
    deadline += stops.forgiven(now);
    if (now >= deadline) return Status(Code::kTimeout, "not every member joined");
    stops.pass_begins();
    backoff.idle();
  }
}

void comm_cache_init() {
  PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_cached, &state().keyval, nullptr);
}

Status engine_comm(MPI_Comm comm, Comm** out, CallQueue** queue, bool make_queue) {
  State& s = state();
  void* value = nullptr;
  int found = 0;
  PMPI_Comm_get_attr(comm, s.keyval, &value, &found);
  auto* cached = static_cast<Cached*>(value);
  Status st;  // the set-up's, where this call made it
  if (!found) {
    cached = new Cached{comm, nullptr, Status::ok(), nullptr};
    MpiBootstrap bootstrap(comm, s.engine->config().timeout);
    st = s.engine->create_comm(bootstrap, &cached->engine_comm);
    if (bootstrap.abandoned()) {
      cached->abandoned = Status(Code::kTimeout,
                                 "communicator unusable: efacoll's set-up of it timed out earlier "
                                 "(not every member joined within EFACOLL_TIMEOUT)");
    } else if (!st.is_ok()) {
      // Every member saw the same blobs, so every member takes this path: the communicator
      // stays with MPI for good.
      EFACOLL_WARN(kInit, "communicator set-up failed, its collectives go to MPI: %s",
                   st.to_string().c_str());
    }
    PMPI_Comm_set_attr(comm, s.keyval, cached);
    auto lock = live_lock();
    live().insert(cached);
  }
  *out = cached->engine_comm.get();
  if (*out && make_queue && !cached->queue) cached->queue = std::make_unique<CallQueue>();
  if (queue) *queue = *out ? cached->queue.get() : nullptr;
  if (*out) return Status::ok();
  if (!found) return st;
  if (!cached->abandoned.is_ok()) return cached->abandoned;
  return Status(Code::kUnsupported, "communicator set-up failed earlier");
}

void comm_cache_release_all() {
  State& s = state();
  std::set<Cached*> all;
  {
    auto lock = live_lock();
    all = live();
  }
  for (Cached* c : all) PMPI_Comm_delete_attr(c->comm, s.keyval);
  if (s.keyval != MPI_KEYVAL_INVALID) PMPI_Comm_free_keyval(&s.keyval);
}

}  // namespace shim
}  // namespace efacoll

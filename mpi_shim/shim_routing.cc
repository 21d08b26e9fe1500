// Which way each call goes, agreed by the ranks of a communicator. Each rank sees only its own
// buffers; routed by them alone, a call whose buffers lie on GPUs on some ranks and on the host
// on others would go to efacoll on some and to MPI on others, and neither side would ever meet
// the other. So at each of a communicator's first kEarlyAgreements blocking calls and every
// EFACOLL_ROUTE_AGREE-th blocking call after, the ranks OR together what their buffers are (one
// small PMPI_Iallreduce: every rank makes it at the same call, since every rank makes the same
// blocking calls on a communicator in the same order), and until the next agreement every call goes
// the way that agreement set:
//   all host:      MPI (efacoll with EFACOLL_HOST_BUFFERS=1);
//   all on GPUs:   efacoll's GPU paths;
//   mixed:         efacoll's fabric path, every rank staging its own data.
// Each way takes every kind of buffer, so a rank whose buffers changed since the agreement joins
// it: its GPU data staged through the host to MPI, or its host data copied to its GPU, or staged
// by the fabric's schedule (CallKinds tells the engine). Agreements only pick the fast way.
// Nonblocking calls never agree (their start must not wait for the other ranks): they take the
// last agreement, or before any the way every kind joins, efacoll's fabric path.
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>

#include "common/kept_alive.h"
#include "mpi_shim/shim.h"

namespace efacoll {
namespace shim {
namespace {

// What a rank's call contributes to an agreement (OR-ed across ranks).
enum Bits : int {
  kHostBits = 1,  // its buffers lie on the host
  kGpuBits = 2,   // some of its buffers lie on a GPU
  kNoGpuRuns = 4  // it cannot run GPU calls (no CUDA runtime, or EFACOLL_GPU=0)
};

struct RouteState {
  // This communicator's blocking calls so far (the four collectives); the first agreed, so from
  // 1 on (unless abandoned) `agreed` holds an agreement.
  uint64_t calls = 0;
  Route agreed;
  Status abandoned;      // an agreement timed out with MPI's exchange pending
  int last_device = -1;  // the GPU of this rank's last call with GPU buffers
};

// Programs often start with a few host-buffer calls (flags, sizes) before their GPU calls: each
// of a communicator's first calls agrees, so that its first GPU calls already run on efacoll.
constexpr uint64_t kEarlyAgreements = 16;

int g_keyval = MPI_KEYVAL_INVALID;

int delete_state(MPI_Comm, int, void* value, void*) {
  delete static_cast<RouteState*>(value);
  return MPI_SUCCESS;
}

RouteState* state_of(MPI_Comm comm) {
  void* value = nullptr;
  int found = 0;
  PMPI_Comm_get_attr(comm, g_keyval, &value, &found);
  if (found) return static_cast<RouteState*>(value);
  auto* fresh = new RouteState();
  PMPI_Comm_set_attr(comm, g_keyval, fresh);
  return fresh;
}

Route route_of(int bits) {
  Route r;
  const bool host = bits & kHostBits, gpu = bits & kGpuBits;
  r.kinds = gpu && host ? CallKinds::kMixed : gpu ? CallKinds::kAllGpu : CallKinds::kAllHost;
  if (r.kinds == CallKinds::kAllHost) {
    r.to_engine = state().params->flag(Param::kHostBuffers);
    r.why = "host buffers";
  } else if (bits & kNoGpuRuns) {
    r.to_engine = false;
    r.why = "GPU buffers, and a rank cannot run GPU calls (no CUDA runtime, or EFACOLL_GPU=0)";
  } else {
    r.to_engine = true;
  }
  return r;
}

}  // namespace

void routing_init() {
  PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_state, &g_keyval, nullptr);
}

Route agreed_route(MPI_Comm comm, const CallBuffers& b, bool may_agree) {
  RouteState* s = state_of(comm);
  const bool own_gpu = b.any_gpu();
  if (own_gpu) s->last_device = is_gpu(b.recv.kind) ? b.recv.device : b.send.device;
  const int64_t every = std::max<int64_t>(1, state().params->integer(Param::kRouteAgree));
  if (!s->abandoned.is_ok()) {
    Route failed;
    failed.error = s->abandoned;
    return failed;
  }
  if (!may_agree && s->calls == 0) {
    const bool gpu_on = state().params->flag(Param::kGpu);
    Route joinable = route_of(kHostBits | kGpuBits | (gpu_on ? 0 : kNoGpuRuns));
    joinable.device = s->last_device;
    return joinable;
  }
  const uint64_t call = may_agree ? s->calls++ : 0;
  if (may_agree && (call < kEarlyAgreements || call % static_cast<uint64_t>(every) == 0)) {
    const bool gpu_runs = state().engine->gpu() != nullptr && state().params->flag(Param::kGpu);
    // MPI's copies: kept reachable past a timeout, since MPI may still write them.
    auto bits = std::make_unique<std::array<int, 2>>();
    (*bits)[0] = (own_gpu ? kGpuBits : kHostBits) | (gpu_runs ? 0 : kNoGpuRuns);
    MPI_Request request = MPI_REQUEST_NULL;
    Status st = PMPI_Iallreduce(&(*bits)[0], &(*bits)[1], 1, MPI_INT, MPI_BOR, comm, &request) ==
                        MPI_SUCCESS
                    ? wait_within(&request, state().engine->config().timeout)
                    : Status(Code::kInternal, "PMPI_Iallreduce failed");
    if (!st.is_ok()) {
      // A rank that never makes this call (it skipped it, made another, or finalized): a later
      // call could meet the exchange left pending on a late member, so every later one fails.
      if (st.code() == Code::kTimeout) keep_alive(std::move(bits));
      s->abandoned = Status(st.code(),
                            "communicator unusable: the ranks' agreement on where its calls run "
                            "failed earlier (" +
                                st.message() + " within EFACOLL_TIMEOUT)");
      Route failed;
      failed.error = Status(st.code(),
                            "the ranks' agreement on where this communicator's calls "
                            "run: " +
                                st.message() +
                                " within EFACOLL_TIMEOUT; one "
                                "skipped this call, made another collective, or finalized");
      return failed;
    }
    s->agreed = route_of((*bits)[1]);
  }
  Route route = s->agreed;
  route.device = s->last_device;
  return route;
}

}  // namespace shim
}  // namespace efacoll

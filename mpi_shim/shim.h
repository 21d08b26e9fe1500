// Internal declarations of the MPI shim: the only code that knows MPI.
#pragma once
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/params.h"
#include "efacoll/engine.h"
#include "efacoll/status.h"
#include "efacoll/types.h"
#include "gpu/memory_kind.h"
#include "topo/nic_choice.h"
#include "topo/topology.h"

#define EFACOLL_EXPORT extern "C" __attribute__((visibility("default")))

namespace efacoll {
namespace shim {

struct State {
  std::unique_ptr<Params> params;
  std::unique_ptr<Engine> engine;  // null: everything goes to PMPI
  int world_rank = -1;
  int local_rank = 0;  // among the ranks of this node (MPI_COMM_TYPE_SHARED)
  int thread_level = MPI_THREAD_SINGLE;
  int keyval = MPI_KEYVAL_INVALID;
  std::mutex engine_mutex;  // taken only under MPI_THREAD_MULTIPLE, by engine_lock()
  bool finalized = false;
};

State& state();

// Keeps the shim's own MPI calls (and calls from the MPI library itself) out of the engine.
class ReentryGuard {
 public:
  ReentryGuard();
  ~ReentryGuard();
  bool reentered() const { return reentered_; }

 private:
  bool reentered_;
};

// A lock of `mutex` under MPI_THREAD_MULTIPLE, and none below it, where one thread calls MPI at
// a time: the shim's own state then costs no lock. Lock: std::unique_lock or std::shared_lock.
template <typename Lock>
Lock lock_if_threads(typename Lock::mutex_type& mutex) {
  return state().thread_level == MPI_THREAD_MULTIPLE ? Lock(mutex) : Lock();
}

// The shim's own lock for its state's teardown (MPI_Finalize); a no-op below
// MPI_THREAD_MULTIPLE. Collectives take none here: the engine serialises itself
// (EngineConfig::concurrent), so SINGLE and FUNNELED pay for no thread lock in the shim.
std::unique_lock<std::mutex> engine_lock();

// --- types (shim_types.cc) ---
bool map_reduce_type(MPI_Datatype type, DType* out);
bool map_op(MPI_Op op, ROp* out);
// A Fortran numeric type with an op the standard defines on its group (MPI_REAL with MPI_SUM,
// MPI_INTEGER with MPI_BAND...); false for every other pair, which MPI then judges.
bool map_fortran_reduction(MPI_Datatype type, MPI_Op op, DType* dtype, ROp* rop);
// A predefined type without holes, for data that is only moved: its size in bytes.
bool plain_type_size(MPI_Datatype type, size_t* out);

// --- NIC choice (shim_nic.cc) ---
// Collective over MPI_COMM_WORLD. requested: EFACOLL_NIC; offered: the provider's domains.
NicChoice choose_rank_nic(const std::string& requested, const std::vector<std::string>& offered,
                          const Topology& topo);
// The PCI address of the GPU this thread's current CUDA context names ("" when none), looked
// up at the first call and remembered; MPI_Init makes that call before PMPI_Init.
const std::string& rank_gpu_from_context();

// --- communicators (shim_comm_cache.cc) ---
void comm_cache_init();
class CallQueue;
struct PendingCall;
// The engine's communicator for `comm`, created on first use (collective over comm). `queue`
// (optional): its calls' queue (call_queue.h), null where no nonblocking call made one, unless
// `make_queue`.
Status engine_comm(MPI_Comm comm, Comm** out, CallQueue** queue = nullptr, bool make_queue = false);
// Waits for a nonblocking collective of the shim's own, polling, under `timeout` (a stop of
// this process not counted): kTimeout where not every member joined. MPI cannot cancel it, so
// after a timeout its buffers stay reachable (keep_alive) and the communicator unusable.
Status wait_within(MPI_Request* request, std::chrono::milliseconds timeout);
void comm_cache_release_all();

// --- argument checks (shim_args.cc) ---
// A rank-local argument error: the MPI error class and what is wrong; MPI_SUCCESS when none.
struct ArgError {
  int error_class = MPI_SUCCESS;
  std::string message;
  bool ok() const { return error_class == MPI_SUCCESS; }
};
bool is_intercomm(MPI_Comm comm);
// MPI_COMM_NULL, a null handle (what PMPI_Comm_f2c makes of a Fortran handle of no
// communicator), a stale copy of a freed one, or a handle MPI itself refuses: MPI_ERR_COMM,
// raised on MPI_COMM_WORLD. `inter` (optional): whether it is an inter-communicator.
ArgError check_comm_handle(MPI_Comm comm, bool* inter = nullptr);
void args_init();     // after MPI_Init; the committed-type probe
void args_release();  // before MPI_Finalize
// Counts as MPI_Count: the ordinary forms' int counts and the large-count (_c) forms' alike.
ArgError check_allreduce(const void* sendbuf, const void* recvbuf, MPI_Count count,
                         MPI_Datatype type, MPI_Op op, MPI_Comm comm);
// Count: int, or MPI_Count (instantiated for both).
template <typename Count>
ArgError check_reduce_scatter(const void* sendbuf, const void* recvbuf, const Count* recvcounts,
                              MPI_Datatype type, MPI_Op op, MPI_Comm comm);
ArgError check_reduce_scatter_block(const void* sendbuf, const void* recvbuf, MPI_Count recvcount,
                                    MPI_Datatype type, MPI_Op op, MPI_Comm comm);
ArgError check_allgather(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                         const void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                         MPI_Comm comm);

// --- freed communicators (shim_freed_comms.cc) ---
// After a successful PMPI_Comm_free of `comm`, whose Fortran index was `index`.
void note_comm_freed(MPI_Comm comm, MPI_Fint index);
// Whether `comm` is a copy of a handle MPI_Comm_free released, with no communicator there since.
bool comm_is_stale(MPI_Comm comm);

// --- errors (shim_errors.cc) ---
void errors_init();
// Raises a bad argument of `call` (an MPI function name) through the communicator's error
// handler (MPI_COMM_WORLD's for MPI_ERR_COMM: that handle has none); returns the MPI error code.
int raise_arg_error(MPI_Comm comm, const char* call, const ArgError& error);
// Raises through the communicator's error handler; returns the MPI error code. Logs the
// message at WARN unless the caller already said it.
int raise_error(MPI_Comm comm, const Status& status, bool log = true);
// Inside a catch block at the C boundary: the exception being handled, logged and raised through
// the communicator's error handler as MPI_ERR_NO_MEM (std::bad_alloc) or MPI_ERR_INTERN; returns
// the MPI error code. MPI_COMM_NULL: logged only (before MPI_Init's end, or no communicator).
// Never throws.
int raise_exception(MPI_Comm comm, const char* call) noexcept;

// --- statistics (shim_stats.cc) ---
void stats_engine_call(CollKind kind, size_t bytes, std::chrono::nanoseconds time);
void stats_mpi_call(CollKind kind, const char* reason);
void stats_print_if_enabled();
struct Counters {
  unsigned long long engine_calls = 0, mpi_calls = 0, engine_bytes = 0;
};
Counters stats_counters(CollKind kind);

// --- GPU buffers passed to MPI (shim_gpu_staging.cc) ---
// Where a call's buffers live (MPI_IN_PLACE: the send side is the receive side).
struct CallBuffers {
  const void* sendbuf = nullptr;
  void* recvbuf = nullptr;
  MemInfo send, recv;
  bool inplace() const { return sendbuf == MPI_IN_PLACE; }
  bool any_gpu() const { return is_gpu(recv.kind) || (!inplace() && is_gpu(send.kind)); }
};
CallBuffers locate(const void* sendbuf, void* recvbuf);

// Bytes a (count, type) pair spans from its buffer pointer.
struct Span {
  MPI_Aint offset = 0;  // the type's true lower bound
  size_t bytes = 0;
};
// The bytes `count` items of `type` span; counts are size_t, since a call's whole extent (the sum
// of a reduce_scatter's counts, an allgather's count times ranks) may pass INT_MAX.
Span span_of(size_t count, MPI_Datatype type);

struct StagedSpans {
  Span send;
  Span recv_in;                   // the receive buffer's extent during the call
  Span recv_out;                  // what MPI writes (the result)
  bool recv_needs_input = false;  // in place: the input is in the receive buffer
};

bool mpi_is_cuda_aware();
// call(send, recv) with host copies of GPU buffers unless the MPI is CUDA-aware.
int staged_pmpi(MPI_Comm comm, const CallBuffers& b, const StagedSpans& spans,
                const std::function<int(const void*, void*)>& call);

// --- routing (shim_routing.cc) ---
// Which way a call goes, as the communicator's ranks last agreed it.
struct Route {
  CallKinds kinds = CallKinds::kThisRank;  // how the ranks' buffers lie, for the engine
  bool to_engine = false;                  // else MPI (GPU data staged unless CUDA-aware)
  const char* why = nullptr;               // why MPI, for the statistics
  // The agreement failed (not every member joined within EFACOLL_TIMEOUT): the call, and every
  // later one on the communicator, fails with it.
  Status error;
  // The GPU of this rank's last call on the communicator with GPU buffers (-1: none): where a
  // call whose own buffers are all on the host copies them in a GPU call.
  int device = -1;
};
void routing_init();  // after MPI_Init
// Collective where `may_agree` (a blocking call) at a communicator's first blocking call and every
// EFACOLL_ROUTE_AGREE-th after (the ranks' buffer kinds OR-ed); else local. Blocking and
// nonblocking calls never match (MPI-3.1 section 5.12), so every rank counts the same blocking
// calls; a nonblocking call must not wait for the others, so it takes the last agreement, and
// before any: the way every kind of buffer can join (efacoll's fabric path, or MPI with
// EFACOLL_GPU=0).
Route agreed_route(MPI_Comm comm, const CallBuffers& b, bool may_agree);

// --- nonblocking calls' requests (shim_requests.cc) ---
// A generalized request for `call` (queued on `comm`'s worker, or already done), completed by
// the completion calls efacoll intercepts; `name` the call that started it.
int start_request(MPI_Comm comm, const char* name, std::shared_ptr<PendingCall> call,
                  MPI_Request* request);
// A persistent call's request: MPI's own inactive one, each MPI_Start also calling `restart`
// (which queues the work and returns it); completed, reported and freed as the others.
int start_persistent(MPI_Comm comm, const char* name,
                     std::function<std::shared_ptr<PendingCall>()> restart, MPI_Request* request);
// Waits until every started call's work ended (MPI_Finalize).
void requests_finish_all();

// --- init (shim_init.cc) ---
bool engine_active();
bool config_force_mr_local();

}  // namespace shim
}  // namespace efacoll

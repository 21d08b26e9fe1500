// Stale copies of freed communicators' handles. MPI_Comm_free sets the caller's handle to
// MPI_COMM_NULL, but a copy kept elsewhere holds the old value: in Open MPI a pointer to freed
// memory, which every query, ours or MPI's, would read (Open MPI 4.1's own MPI_Comm_size crashes
// on it). Such a value is recognised without being read: MPI_Comm_free (ours) remembers the
// values and Fortran indices of the communicators it frees, and MPI's Fortran table, which
// PMPI_Comm_f2c reads without touching any communicator, says whether one lives at that value
// now: at its old index (not yet destroyed, or a new one took both the memory and the slot) or
// at another (a new one took the memory). Open MPI gives a new communicator the lowest free slot,
// so a scan for it ends after a long run of empty slots past every index seen.
// MPICH's handles are their own Fortran indices, reused from object pools: there the table always
// says "alive", and nothing is caught. Open MPI's Fortran library calls PMPI_Comm_free itself, so
// its MPI_COMM_FREE is defined in shim_fortran.cc too and leads here; a stale Fortran handle
// becomes a null one in PMPI_Comm_f2c, which check_comm_handle refuses.
#include <atomic>
#include <shared_mutex>
#include <unordered_map>

#include "mpi_shim/shim.h"

namespace efacoll {
namespace shim {
namespace {

// Longer than any run of freed slots below a live communicator in a job that holds fewer than
// this many communicators at once.
constexpr MPI_Fint kEmptyRunToStop = 65536;
// Beyond this many remembered values, new frees are not remembered: their stale copies go
// undetected rather than the table growing without bound.
constexpr size_t kMaxRemembered = 65536;

struct Freed {
  std::unordered_map<MPI_Comm, MPI_Fint> index_of;
  MPI_Fint highest_index = 0;
  std::shared_mutex mutex;  // taken only under MPI_THREAD_MULTIPLE
  std::atomic<bool> any{false};
};

Freed& freed() {
  static auto* f = new Freed();
  return *f;
}

std::unique_lock<std::shared_mutex> write_lock(Freed& f) {
  return lock_if_threads<std::unique_lock<std::shared_mutex>>(f.mutex);
}

std::shared_lock<std::shared_mutex> read_lock(Freed& f) {
  return lock_if_threads<std::shared_lock<std::shared_mutex>>(f.mutex);
}

bool lives_anywhere(MPI_Comm comm, MPI_Fint highest_seen) {
  MPI_Fint empty_run = 0;
  for (MPI_Fint i = 0; i <= highest_seen || empty_run < kEmptyRunToStop; ++i) {
    const MPI_Comm at = PMPI_Comm_f2c(i);
    if (at == comm) return true;
    empty_run = (at == MPI_Comm{} || at == MPI_COMM_NULL) ? empty_run + 1 : 0;
  }
  return false;
}

}  // namespace

void note_comm_freed(MPI_Comm comm, MPI_Fint index) {
  if (index < 0) return;
  Freed& f = freed();
  auto lock = write_lock(f);
  if (f.index_of.size() >= kMaxRemembered && !f.index_of.count(comm)) return;
  f.index_of[comm] = index;
  if (index > f.highest_index) f.highest_index = index;
  f.any.store(true, std::memory_order_release);
}

bool comm_is_stale(MPI_Comm comm) {
  Freed& f = freed();
  if (!f.any.load(std::memory_order_acquire)) return false;
  MPI_Fint index = 0, highest = 0;
  {
    auto lock = read_lock(f);
    auto it = f.index_of.find(comm);
    if (it == f.index_of.end()) return false;
    index = it->second;
    highest = f.highest_index;
  }
  if (PMPI_Comm_f2c(index) == comm) return false;
  if (!lives_anywhere(comm, highest)) return true;
  auto lock = write_lock(f);
  f.index_of.erase(comm);  // a new communicator took the memory: its handle is valid
  return false;
}

}  // namespace shim
}  // namespace efacoll

using namespace efacoll;
using namespace efacoll::shim;

// Frees as MPI does, remembering the value it frees. A handle check_comm_handle refuses gets
// MPI_ERR_COMM here too: a stale copy shown to MPI would free whatever now lies at that address.
EFACOLL_EXPORT int MPI_Comm_free(MPI_Comm* comm) {
  try {
    if (!engine_active() || comm == nullptr) return PMPI_Comm_free(comm);
    const ArgError bad = check_comm_handle(*comm);
    if (!bad.ok()) return raise_arg_error(*comm, "MPI_Comm_free", bad);
    const MPI_Comm value = *comm;
    const MPI_Fint index = PMPI_Comm_c2f(value);
    const int rc = PMPI_Comm_free(comm);
    if (rc == MPI_SUCCESS) note_comm_freed(value, index);
    return rc;
  } catch (...) {
    return raise_exception(comm != nullptr ? *comm : MPI_COMM_NULL, "MPI_Comm_free");
  }
}

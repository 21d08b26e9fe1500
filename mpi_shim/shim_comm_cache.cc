// Engine communicators cached on MPI communicators with an attribute: created on first use,
// freed by the attribute's delete callback (MPI_Comm_free) or at MPI_Finalize.
#include <set>

#include "common/log.h"
#include "mpi_shim/shim.h"

namespace efacoll {
namespace shim {
namespace {

class MpiBootstrap : public Bootstrap {
 public:
  explicit MpiBootstrap(MPI_Comm comm) : comm_(comm) {
    PMPI_Comm_rank(comm, &rank_);
    PMPI_Comm_size(comm, &size_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status allgather(const void* in, size_t bytes, void* out) override {
    int rc = PMPI_Allgather(in, static_cast<int>(bytes), MPI_BYTE, out, static_cast<int>(bytes),
                            MPI_BYTE, comm_);
    if (rc != MPI_SUCCESS) return Status(Code::kInternal, "bootstrap PMPI_Allgather failed");
    return Status::ok();
  }

 private:
  MPI_Comm comm_;
  int rank_ = 0, size_ = 0;
};

struct Cached {
  MPI_Comm comm;
  std::unique_ptr<Comm> engine_comm;  // null: set-up failed, this communicator uses MPI
};

std::set<Cached*>& live() {
  static auto* s = new std::set<Cached*>();
  return *s;
}

// Guards live(): threads create and free communicators at once under MPI_THREAD_MULTIPLE. Taken
// only then, and only when a communicator comes or goes, never per call.
std::unique_lock<std::mutex> live_lock() {
  static auto* m = new std::mutex();
  if (state().thread_level != MPI_THREAD_MULTIPLE) return std::unique_lock<std::mutex>();
  return std::unique_lock<std::mutex>(*m);
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

void comm_cache_init() {
  PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_cached, &state().keyval, nullptr);
}

Status engine_comm(MPI_Comm comm, Comm** out) {
  State& s = state();
  void* value = nullptr;
  int found = 0;
  PMPI_Comm_get_attr(comm, s.keyval, &value, &found);
  if (found) {
    *out = static_cast<Cached*>(value)->engine_comm.get();
    return *out ? Status::ok() : Status(Code::kUnsupported, "communicator set-up failed earlier");
  }
  auto* cached = new Cached{comm, nullptr};
  MpiBootstrap bootstrap(comm);
  Status st = s.engine->create_comm(bootstrap, &cached->engine_comm);
  if (!st.is_ok()) {
    // Every member saw the same blobs, so every member takes this path: the communicator stays
    // with MPI for good.
    EFACOLL_WARN(kInit, "communicator set-up failed, its collectives go to MPI: %s",
                 st.to_string().c_str());
  }
  PMPI_Comm_set_attr(comm, s.keyval, cached);
  auto lock = live_lock();
  live().insert(cached);
  *out = cached->engine_comm.get();
  return *out ? Status::ok() : st;
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

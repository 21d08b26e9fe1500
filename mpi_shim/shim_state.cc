#include "mpi_shim/shim.h"

namespace efacoll {
namespace shim {
namespace {
thread_local bool t_inside = false;
}

State& state() {
  static State* s = new State();  // never destroyed: MPI may call us during exit
  return *s;
}

ReentryGuard::ReentryGuard() : reentered_(t_inside) { t_inside = true; }
ReentryGuard::~ReentryGuard() {
  if (!reentered_) t_inside = false;
}

std::unique_lock<std::mutex> engine_lock() {
  return lock_if_threads<std::unique_lock<std::mutex>>(state().engine_mutex);
}

bool engine_active() {
  State& s = state();
  return s.engine != nullptr && !s.finalized;
}

}  // namespace shim
}  // namespace efacoll

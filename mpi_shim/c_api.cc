// The thin C API: lets programs (and the MPI tests) ask what efacoll did.
#include "efacoll/efacoll.h"
#include "mpi_shim/shim.h"
#include "transport/transport.h"

using namespace efacoll;
using namespace efacoll::shim;

EFACOLL_EXPORT int efacoll_get_counters(efacoll_collective coll, efacoll_counters* out) {
  try {
    if (out == nullptr || coll < 0 || coll >= EFACOLL_NUM_COLLECTIVES) return -1;
    Counters c = stats_counters(static_cast<CollKind>(coll));
    out->engine_calls = c.engine_calls;
    out->mpi_calls = c.mpi_calls;
    out->engine_bytes = c.engine_bytes;
    return 0;
  } catch (...) {
    raise_exception(MPI_COMM_NULL, "efacoll_get_counters");  // logged; the C API's failure is -1
    return -1;
  }
}

EFACOLL_EXPORT int efacoll_get_resource_usage(efacoll_resource_usage* out) {
  try {
    State& s = state();
    if (out == nullptr || !engine_active()) return -1;
    const ResourceUsage u = s.engine->resource_usage();
    out->communicators = u.communicators;
    out->sub_communicators = u.sub_communicators;
    out->mr_cache_entries = u.mr_cache_entries;
    out->mr_cache_bytes = u.mr_cache_bytes;
    out->mr_cache_capacity = u.mr_cache_capacity;
    out->registrations = u.registrations;
    out->thread_multiple = s.thread_level == MPI_THREAD_MULTIPLE ? 1 : 0;
    out->retired_bytes_held = u.retired_bytes_held;
    out->retired_bytes_total = u.retired_bytes_total;
    out->gpu_bytes_awaiting_free = u.gpu_bytes_awaiting_free;
    out->ipc_mappings_cached = u.ipc_mappings_cached;
    out->ipc_mappings_capacity = u.ipc_mappings_capacity;
    out->ipc_mappings_awaiting_close = u.ipc_mappings_awaiting_close;
    return 0;
  } catch (...) {
    raise_exception(MPI_COMM_NULL,
                    "efacoll_get_resource_usage");  // logged; the C API's failure is -1
    return -1;
  }
}

EFACOLL_EXPORT const char* efacoll_provider(void) {
  State& s = state();
  return s.engine ? s.engine->transport_info().provider.c_str() : nullptr;
}

EFACOLL_EXPORT int efacoll_set_algo(const char* spec) {
  try {
    State& s = state();
    if (!s.engine || spec == nullptr) return -1;
    return s.engine->set_algo(spec).is_ok() ? 0 : -1;
  } catch (...) {
    raise_exception(MPI_COMM_NULL, "efacoll_set_algo");  // logged; the C API's failure is -1
    return -1;
  }
}

EFACOLL_EXPORT const char* efacoll_last_algorithm(void) {
  State& s = state();
  return s.engine ? s.engine->last_algorithm() : nullptr;
}

EFACOLL_EXPORT double efacoll_last_predicted_us(void) {
  State& s = state();
  return s.engine ? s.engine->last_predicted_us() : 0;
}

EFACOLL_EXPORT int efacoll_last_chunking(size_t* chunk_bytes, int* channels) {
  State& s = state();
  if (!s.engine) return -1;
  const TunedChoice last = s.engine->last_choice();  // one snapshot: both from one call
  if (chunk_bytes) *chunk_bytes = last.chunk_bytes;
  if (channels) *channels = last.channels;
  return 0;
}

EFACOLL_EXPORT int efacoll_last_on_trial(void) {
  State& s = state();
  return s.engine && s.engine->last_choice().on_trial ? 1 : 0;
}

#include "efacoll_api.h"

#include <dlfcn.h>

#include "efacoll/efacoll.h"

namespace efacoll_bench {
namespace {

template <typename Fn>
Fn lookup(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

efacoll_collective to_efacoll(Collective c) {
  if (c == Collective::kAllreduce) return EFACOLL_ALLREDUCE;
  return c == Collective::kAllgather ? EFACOLL_ALLGATHER : EFACOLL_REDUCE_SCATTER;
}

}  // namespace

EfacollApi find_efacoll() {
  EfacollApi api;
  auto provider = lookup<const char* (*)()>("efacoll_provider");
  api.loaded = provider != nullptr;
  const char* name = provider ? provider() : nullptr;
  if (name) api.provider = name;
  return api;
}

long long EfacollApi::passed_to_host_mpi(Collective c) const {
  auto get = lookup<int (*)(efacoll_collective, efacoll_counters*)>("efacoll_get_counters");
  efacoll_counters counters;
  if (!get || get(to_efacoll(c), &counters) != 0) return -1;
  return static_cast<long long>(counters.mpi_calls);
}

std::string EfacollApi::last_algorithm() const {
  auto get = lookup<const char* (*)()>("efacoll_last_algorithm");
  const char* name = get ? get() : nullptr;
  return name ? name : "";
}

}  // namespace efacoll_bench

// efacoll's C API (include/efacoll/efacoll.h), found at run time with dlsym: the bench also runs
// without libefacoll.so preloaded, and then says so instead of measuring the host MPI twice.
#ifndef EFACOLL_BENCH_EFACOLL_API_H
#define EFACOLL_BENCH_EFACOLL_API_H

#include <string>

#include "bench_types.h"

namespace efacoll_bench {

struct EfacollApi {
  bool loaded = false;
  std::string provider;  // empty: not loaded, or loaded but inactive

  // Calls of this collective efacoll has handed to the host MPI in this process; -1: unknown.
  long long passed_to_host_mpi(Collective c) const;
  // The algorithm of this process's last collective run by efacoll; empty when it does not say.
  std::string last_algorithm() const;
};

EfacollApi find_efacoll();

}  // namespace efacoll_bench

#endif

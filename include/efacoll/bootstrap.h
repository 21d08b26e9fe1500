// How a communicator's members find each other: the shim implements it with PMPI_Allgather,
// tests with threads. Only small blobs go through it, only at communicator set-up.
#pragma once
#include <cstddef>

#include "efacoll/status.h"

namespace efacoll {

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // out receives size() * bytes: rank i's blob at i * bytes.
  virtual Status allgather(const void* in, size_t bytes, void* out) = 0;
};

}  // namespace efacoll

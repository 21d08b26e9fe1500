// What efacoll keeps to the end of the process on purpose: memory a provider (or the host MPI)
// may still write after efacoll has given up on it, because the operation could be neither
// finished nor canceled. Kept here rather than dropped, so that it stays reachable: a leak
// checker then reports only what efacoll lost by mistake.
#pragma once
#include <memory>

namespace efacoll {

// Takes `object` for good; it is never freed (freeing it could let the provider write freed
// memory). Thread-safe.
void keep_alive_pointer(const void* object);

template <typename T>
void keep_alive(std::unique_ptr<T> object) {
  keep_alive_pointer(object.release());
}

}  // namespace efacoll

#include "transport/fabric/shm_name.h"

#include <unistd.h>

#include <cstdio>
#include <random>

namespace efacoll {

std::string shm_name_prefix(long pid) { return kShmNamePrefix + std::to_string(pid) + "-"; }

std::string unique_shm_name() {
  std::random_device entropy;
  const unsigned long long bits = (static_cast<unsigned long long>(entropy()) << 32) ^ entropy();
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", bits);
  return shm_name_prefix(static_cast<long>(getpid())) + hex;
}

}  // namespace efacoll

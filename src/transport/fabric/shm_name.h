// shm (libfabric 1.17) names an endpoint's shared-memory region after the process id and fails
// fi_enable with EBUSY where a region of that name was left by a killed process whose pid has
// come round again. Regions efacoll names itself never meet an old one.
#pragma once
#include <string>

namespace efacoll {

constexpr const char* kShmNamePrefix = "efacoll-";

// "efacoll-<pid>-<64 random bits in hex>": new at every call.
std::string unique_shm_name();

// The prefix of every region a process `pid` has named (under /dev/shm): what a test that killed
// it removes.
std::string shm_name_prefix(long pid);

}  // namespace efacoll

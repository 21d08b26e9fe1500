// fi_getinfo with hints that match EFA's rules and still run on tcp/shm/udp.
#pragma once
#include <rdma/fabric.h>

#include <memory>
#include <string>
#include <vector>

#include "efacoll/status.h"

namespace efacoll {

struct FiInfoDeleter {
  void operator()(fi_info* info) const { fi_freeinfo(info); }
};
using FiInfoPtr = std::unique_ptr<fi_info, FiInfoDeleter>;

// The API version to ask for: what we were compiled for, but never newer than the library
// (a newer request fails with -FI_ENOSYS).
uint32_t fabric_api_version();
std::string fabric_library_version();

// Hints: RDM, tagged + msg, FI_CONTEXT|FI_CONTEXT2, every mr_mode bit EFA may ask for.
FiInfoPtr make_hints(const std::string& provider);

// First matching info for the provider ("efa", "tcp", "shm", "udp", ...), or kUnsupported.
Status find_provider(const std::string& provider, FiInfoPtr* out);

// Distinct names of every RDM tagged provider libfabric offers here.
std::vector<std::string> offered_providers();

}  // namespace efacoll

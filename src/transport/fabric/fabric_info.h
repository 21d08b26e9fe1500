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

// Hints: RDM, tagged + msg, FI_CONTEXT|FI_CONTEXT2, every mr_mode bit EFA may ask for;
// with hmem, FI_HMEM and FI_MR_HMEM too; with rma, RMA writes (one-sided protocol).
FiInfoPtr make_hints(const std::string& provider, bool hmem = false, bool rma = false,
                     const std::string& domain = "");

// First matching info for the provider ("efa", "tcp", "shm", "udp", ...), or kUnsupported.
// Infos with RMA are preferred (and, with try_hmem, with FI_HMEM); less is taken when that is
// all the provider has.
// domain: one of the provider's domains (a NIC, e.g. rdmap79s0-rdm, or tcp's lo); empty: the
// first it lists.
Status find_provider(const std::string& provider, FiInfoPtr* out, bool try_hmem = false,
                     const std::string& domain = "");

// The provider's domains (its NICs), in the order it lists them.
std::vector<std::string> offered_domains(const std::string& provider);

// Distinct names of every RDM tagged provider libfabric offers here.
std::vector<std::string> offered_providers();

}  // namespace efacoll

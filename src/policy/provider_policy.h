// Which provider efacoll's own traffic uses, decided from what libfabric offers. A pure
// function: no libfabric, no environment, so every case is unit-tested.
#pragma once
#include <string>
#include <vector>

namespace efacoll {

struct ProviderDecision {
  bool ok = false;
  std::string warning;  // printed at WARN when ok (a provider other than EFA, chosen on purpose)
  std::string error;    // the one clear line when !ok
};

// requested: EFACOLL_PROVIDER; found: whether fi_getinfo returned it; offered: every RDM provider
// libfabric offers; fi_provider_env: FI_PROVIDER as set (filters what libfabric shows), or "".
ProviderDecision decide_provider(const std::string& requested, bool found,
                                 const std::vector<std::string>& offered,
                                 const std::string& fi_provider_env);

}  // namespace efacoll

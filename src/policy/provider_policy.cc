#include "policy/provider_policy.h"

namespace efacoll {
namespace {

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return out.empty() ? "none" : out;
}

}  // namespace

ProviderDecision decide_provider(const std::string& requested, bool found,
                                 const std::vector<std::string>& offered,
                                 const std::string& fi_provider_env) {
  ProviderDecision d;
  const bool efa = requested == "efa";
  if (found) {
    d.ok = true;
    if (!efa) {
      d.warning = "EFACOLL_PROVIDER=" + requested +
                  ": efacoll's traffic uses this provider, NOT EFA (chosen on purpose; unset "
                  "EFACOLL_PROVIDER to require EFA)";
    }
    return d;
  }
  std::string filter;
  if (!fi_provider_env.empty()) {
    filter = " FI_PROVIDER=" + fi_provider_env + " limits what libfabric shows.";
  }
  if (efa) {
    d.error = "the libfabric EFA provider is not available (libfabric offered: " + join(offered) +
              ")." + filter +
              " efacoll never falls back to TCP silently: run on an EFA-enabled instance with "
              "AWS's libfabric (/opt/amazon/efa), or choose another provider deliberately with "
              "EFACOLL_PROVIDER=tcp|shm|udp, or disable efacoll with EFACOLL_ENABLE=0.";
  } else {
    d.error = "EFACOLL_PROVIDER=" + requested +
              " is not available (libfabric offered: " + join(offered) + ")." + filter;
  }
  return d;
}

}  // namespace efacoll

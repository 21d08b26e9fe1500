// Interface settings (NCCL_SOCKET_IFNAME, Open MPI's if_include, ...) against the interfaces a
// node has: a name that matches nothing is the classic "works on one cluster, hangs on the next".
#pragma once
#include <string>
#include <vector>

namespace efacoll {
namespace doctor {

struct IfaceMatch {
  bool exclude = false;                // "^...": the names are excluded, the rest is used
  std::vector<std::string> unmatched;  // names (or prefixes) that match no interface
  std::vector<std::string> selected;   // interfaces the setting leaves in use
};

// NCCL_SOCKET_IFNAME syntax: "eth,ens" prefixes, "=eth0" exact names, "^docker,lo" excludes
// ("^=" excludes exact names).
IfaceMatch match_nccl_ifname(const std::string& value, const std::vector<std::string>& interfaces);

// A comma list of exact names ("eth0,eth1"). Subnets ("10.0.0.0/16", Open MPI takes them) are
// not names and are skipped; "all" selects everything.
IfaceMatch match_names(const std::string& value, const std::vector<std::string>& interfaces);

}  // namespace doctor
}  // namespace efacoll

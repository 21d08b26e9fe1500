#include "doctor/doctor_ifname.h"

#include <algorithm>

#include "doctor/doctor_check.h"

namespace efacoll {
namespace doctor {
namespace {

// The interfaces each pattern matches; patterns that match none go to `unmatched`.
IfaceMatch match(const std::vector<std::string>& patterns, bool exclude, bool prefix,
                 const std::vector<std::string>& interfaces) {
  IfaceMatch m;
  m.exclude = exclude;
  std::vector<std::string> hit;
  for (const std::string& p : patterns) {
    bool any = false;
    for (const std::string& i : interfaces) {
      if (prefix ? i.compare(0, p.size(), p) == 0 : i == p) {
        any = true;
        if (std::find(hit.begin(), hit.end(), i) == hit.end()) hit.push_back(i);
      }
    }
    if (!any) m.unmatched.push_back(p);
  }
  for (const std::string& i : interfaces) {
    const bool named = std::find(hit.begin(), hit.end(), i) != hit.end();
    if (named != exclude) m.selected.push_back(i);
  }
  return m;
}

}  // namespace

IfaceMatch match_nccl_ifname(const std::string& value, const std::vector<std::string>& interfaces) {
  size_t at = 0;
  const bool exclude = at < value.size() && value[at] == '^';
  if (exclude) ++at;
  const bool exact = at < value.size() && value[at] == '=';
  if (exact) ++at;
  return match(split_list(value.substr(at)), exclude, !exact, interfaces);
}

IfaceMatch match_names(const std::string& value, const std::vector<std::string>& interfaces) {
  std::vector<std::string> names;
  for (const std::string& n : split_list(value)) {
    if (n == "all") return match({}, true, false, interfaces);
    if (n.find('/') == std::string::npos) names.push_back(n);
  }
  // Subnets only: which interfaces they select depends on addresses, not names.
  if (names.empty()) return match({}, true, false, interfaces);
  return match(names, false, false, interfaces);
}

}  // namespace doctor
}  // namespace efacoll

#include "doctor/doctor_check.h"

#include <algorithm>
#include <cctype>

namespace efacoll {
namespace doctor {

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kOk:
      return "OK";
    case Verdict::kInfo:
      return "INFO";
    case Verdict::kWarn:
      return "WARN";
    case Verdict::kFail:
      return "FAIL";
  }
  return "?";
}

int exit_status(const Checks& checks) {
  for (const Check& c : checks) {
    if (c.verdict == Verdict::kFail) return 1;
  }
  return 0;
}

std::string join(const std::vector<std::string>& items, const std::string& none) {
  std::string out;
  for (const std::string& i : items) out += (out.empty() ? "" : ", ") + i;
  return out.empty() ? none : out;
}

std::string env_value(const EnvMap& env, const std::string& name) {
  auto it = env.find(name);
  return it == env.end() ? "" : it->second;
}

bool env_has(const EnvMap& env, const std::string& name) { return env.count(name) != 0; }

bool truthy(const std::string& value) {
  std::string v = value;
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
  return v == "1" || v == "yes" || v == "on" || v == "true" || v == "enable";
}

std::vector<std::string> split_list(const std::string& text, char sep) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(sep, start);
    if (end == std::string::npos) end = text.size();
    if (end > start) items.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return items;
}

bool provider_list_allows(const std::string& list, const std::string& provider) {
  if (list.empty()) return true;
  const bool exclude = list[0] == '^';
  bool named = false;
  for (const std::string& item : split_list(exclude ? list.substr(1) : list)) {
    for (const std::string& part : split_list(item, ';')) named = named || part == provider;
  }
  return named != exclude;
}

std::string join_brief(const std::vector<std::string>& items, size_t most) {
  if (items.size() <= most) return join(items);
  std::vector<std::string> first(items.begin(), items.begin() + most);
  return join(first) + ", ... (" + std::to_string(items.size()) + ")";
}

}  // namespace doctor
}  // namespace efacoll

// One finding of efacoll-doctor: a name, a verdict, what was found and how to fix it.
#pragma once
#include <string>
#include <vector>

#include "common/params.h"

namespace efacoll {
namespace doctor {

// kInfo: a plain fact that needs nothing done. Only kFail makes the exit status 1.
enum class Verdict { kOk, kInfo, kWarn, kFail };
const char* verdict_name(Verdict v);

struct Check {
  std::string name;  // short and stable, for scripts: "efa", "libfabric", "gpu0", ...
  Verdict verdict = Verdict::kOk;
  std::string finding;  // one line
  std::string fix;      // a command or variable; empty when nothing is to be done
};

using Checks = std::vector<Check>;

// 0 when nothing failed, 1 on any kFail.
int exit_status(const Checks& checks);

// "a, b, c", or `none` for an empty list.
std::string join(const std::vector<std::string>& items, const std::string& none = "none");
// The variable's value, or "" when unset.
std::string env_value(const EnvMap& env, const std::string& name);
bool env_has(const EnvMap& env, const std::string& name);
// "1", "yes", "on", "true", "enable" (any case).
bool truthy(const std::string& value);
// Whether a libfabric-style provider list lets `provider` through: "" (no filter), "efa,tcp",
// "^tcp" (all but), "tcp;ofi_rxm" (a provider layered over another counts as both).
bool provider_list_allows(const std::string& list, const std::string& provider);
// The first `most` items and how many there are: "a, b, c, d, ... (32)".
std::string join_brief(const std::vector<std::string>& items, size_t most = 4);
// Comma-separated items, empty ones dropped.
std::vector<std::string> split_list(const std::string& text, char sep = ',');

}  // namespace doctor
}  // namespace efacoll

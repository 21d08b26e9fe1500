// Parameters: read once, from the environment or (in tests) from a map. Nothing else reads getenv.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/param_table.h"
#include "efacoll/status.h"

namespace efacoll {

enum class Param : int {
#define EFACOLL_PARAM_ID(id, name, kind, def, doc) id,
  EFACOLL_PARAMS(EFACOLL_PARAM_ID)
#undef EFACOLL_PARAM_ID
      kCount
};

enum class ParamKind { kText, kInteger, kBool, kBytes, kSeconds };

struct ParamInfo {
  const char* name;
  ParamKind kind;
  const char* default_value;
  const char* doc;
};

const ParamInfo& param_info(Param p);

using EnvMap = std::map<std::string, std::string>;

// Snapshot of the process environment (all variables; the steering policy needs non-EFACOLL ones).
EnvMap environment_snapshot();

class Params {
 public:
  // Values not given, or not parseable, take the table default (the latter with a problem noted).
  static Params from_env(const EnvMap& env);

  const std::string& text(Param p) const { return values_[static_cast<int>(p)]; }
  int64_t integer(Param p) const { return ints_[static_cast<int>(p)]; }
  bool flag(Param p) const { return integer(p) != 0; }
  bool is_set(Param p) const { return set_[static_cast<int>(p)]; }

  // Human-readable lines: unknown EFACOLL_* names, unparseable values.
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  std::vector<std::string> values_;
  std::vector<int64_t> ints_;
  std::vector<bool> set_;
  std::vector<std::string> problems_;
};

// "4M", "512k", "1G", "123" -> bytes. Returns false on garbage.
bool parse_bytes(const std::string& text, int64_t* out);

// Markdown table of every parameter, for docs/configuration.md.
std::string params_markdown();

}  // namespace efacoll

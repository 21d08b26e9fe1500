#include "common/params.h"

#include <cstdlib>
#include <cstring>

extern char** environ;

namespace efacoll {
namespace {

const ParamInfo kParams[] = {
#define EFACOLL_PARAM_INFO(id, name, kind, def, doc) {name, ParamKind::kind, def, doc},
    EFACOLL_PARAMS(EFACOLL_PARAM_INFO)
#undef EFACOLL_PARAM_INFO
};
constexpr int kNumParams = static_cast<int>(Param::kCount);

bool parse_bool(const std::string& t, int64_t* out) {
  if (t == "1" || t == "y" || t == "yes" || t == "true" || t == "on") return *out = 1, true;
  if (t == "0" || t == "n" || t == "no" || t == "false" || t == "off") return *out = 0, true;
  return false;
}

bool parse_integer(const std::string& t, int64_t* out) {
  if (t.empty()) return false;
  char* end = nullptr;
  long long v = std::strtoll(t.c_str(), &end, 10);
  if (*end != '\0') return false;
  *out = v;
  return true;
}

bool parse_value(ParamKind kind, const std::string& t, int64_t* out) {
  switch (kind) {
    case ParamKind::kText:
      *out = 0;
      return true;
    case ParamKind::kBool:
      return parse_bool(t, out);
    case ParamKind::kInteger:
    case ParamKind::kSeconds:
      return parse_integer(t, out);
    case ParamKind::kBytes:
      return parse_bytes(t, out);
  }
  return false;
}

}  // namespace

const ParamInfo& param_info(Param p) { return kParams[static_cast<int>(p)]; }

EnvMap environment_snapshot() {
  EnvMap env;
  for (char** e = environ; e && *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq) env.emplace(std::string(*e, eq - *e), std::string(eq + 1));
  }
  return env;
}

bool parse_bytes(const std::string& text, int64_t* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || v < 0) return false;
  int64_t mult = 1;
  switch (*end) {
    case '\0':
      break;
    case 'k':
    case 'K':
      mult = 1ll << 10;
      ++end;
      break;
    case 'm':
    case 'M':
      mult = 1ll << 20;
      ++end;
      break;
    case 'g':
    case 'G':
      mult = 1ll << 30;
      ++end;
      break;
    default:
      return false;
  }
  if (*end == 'B' || *end == 'b') ++end;
  if (*end != '\0') return false;
  *out = v * mult;
  return true;
}

Params Params::from_env(const EnvMap& env) {
  Params p;
  p.values_.resize(kNumParams);
  p.ints_.resize(kNumParams);
  p.set_.assign(kNumParams, false);
  for (int i = 0; i < kNumParams; ++i) {
    const ParamInfo& info = kParams[i];
    std::string value = info.default_value;
    auto it = env.find(info.name);
    if (it != env.end()) {
      int64_t parsed = 0;
      if (parse_value(info.kind, it->second, &parsed)) {
        value = it->second;
        p.set_[i] = true;
      } else {
        p.problems_.push_back(std::string(info.name) + "='" + it->second +
                              "' is not a valid value; using the default " + info.default_value);
      }
    }
    p.values_[i] = value;
    parse_value(info.kind, value, &p.ints_[i]);
  }
  for (const auto& kv : env) {
    if (kv.first.rfind("EFACOLL_", 0) != 0) continue;
    bool known = false;
    for (const ParamInfo& info : kParams) known = known || kv.first == info.name;
    if (!known) p.problems_.push_back("unknown variable " + kv.first + " (ignored)");
  }
  return p;
}

std::string params_markdown() {
  std::string out = "| variable | default | meaning |\n| --- | --- | --- |\n";
  for (const ParamInfo& info : kParams) {
    out +=
        std::string("| `") + info.name + "` | `" + info.default_value + "` | " + info.doc + " |\n";
  }
  return out;
}

}  // namespace efacoll

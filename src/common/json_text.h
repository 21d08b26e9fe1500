// A string as a JSON string literal, quotes included: the doctor's and the benchmark's reports
// are read by scripts, so every control character is escaped.
#pragma once
#include <cstdio>
#include <string>

namespace efacoll {

inline std::string json_quoted(const std::string& text) {
  std::string out = "\"";
  for (unsigned char ch : text) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += static_cast<char>(ch);
    } else if (ch == '\n' || ch == '\t' || ch == '\r') {
      out += ch == '\n' ? "\\n" : ch == '\t' ? "\\t" : "\\r";
    } else if (ch < 0x20) {
      char escape[8];
      std::snprintf(escape, sizeof(escape), "\\u%04x", ch);
      out += escape;
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out + "\"";
}

}  // namespace efacoll

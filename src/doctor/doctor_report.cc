#include "doctor/doctor_report.h"

#include <algorithm>
#include <cstdio>

#include "common/json_text.h"

namespace efacoll {
namespace doctor {
namespace {

struct Counts {
  int by_verdict[4] = {0, 0, 0, 0};
  int of(Verdict v) const { return by_verdict[static_cast<int>(v)]; }
};

Counts count(const Checks& checks) {
  Counts c;
  for (const Check& check : checks) ++c.by_verdict[static_cast<int>(check.verdict)];
  return c;
}

// One line per check, whatever a value from the environment holds.
std::string one_line(std::string text) {
  for (char& ch : text) {
    if (static_cast<unsigned char>(ch) < 0x20) ch = ' ';
  }
  return text;
}

std::string pad(const std::string& text, size_t width) {
  return text.size() >= width ? text + " " : text + std::string(width - text.size(), ' ');
}

}  // namespace

std::string render_text(const ReportHeader& header, const Checks& checks,
                        const std::string& prefix) {
  size_t name_width = 10;
  for (const Check& c : checks) name_width = std::max(name_width, c.name.size() + 2);
  const std::string indent(6 + name_width, ' ');
  std::string out = prefix + "efacoll-doctor " + header.version + " on " + header.host + "\n";
  for (const Check& c : checks) {
    out += prefix + pad(verdict_name(c.verdict), 6) + pad(c.name, name_width) +
           one_line(c.finding) + "\n";
    if (!c.fix.empty()) out += prefix + indent + "fix: " + one_line(c.fix) + "\n";
  }
  const Counts n = count(checks);
  const int status = exit_status(checks);
  const char* meaning = n.of(Verdict::kFail)   ? "a job here will not run as intended"
                        : n.of(Verdict::kWarn) ? "a job here runs, with the warnings above"
                                               : "all good";
  out += prefix + "summary: " + std::to_string(n.of(Verdict::kFail)) + " FAIL, " +
         std::to_string(n.of(Verdict::kWarn)) + " WARN, " + std::to_string(n.of(Verdict::kOk)) +
         " OK, " + std::to_string(n.of(Verdict::kInfo)) + " INFO: " + meaning + " (exit " +
         std::to_string(status) + ")\n";
  return out;
}

std::string render_json(const ReportHeader& header, const Checks& checks) {
  std::string out = "{\"version\": " + json_quoted(header.version) +
                    ", \"host\": " + json_quoted(header.host) + ", \"checks\": [";
  for (size_t i = 0; i < checks.size(); ++i) {
    const Check& c = checks[i];
    out += std::string(i ? ", " : "") + "{\"name\": " + json_quoted(c.name) +
           ", \"status\": " + json_quoted(verdict_name(c.verdict)) +
           ", \"finding\": " + json_quoted(c.finding) + ", \"fix\": " + json_quoted(c.fix) + "}";
  }
  const Counts n = count(checks);
  out += "], \"summary\": {\"ok\": " + std::to_string(n.of(Verdict::kOk)) +
         ", \"info\": " + std::to_string(n.of(Verdict::kInfo)) +
         ", \"warn\": " + std::to_string(n.of(Verdict::kWarn)) +
         ", \"fail\": " + std::to_string(n.of(Verdict::kFail)) +
         ", \"exit_status\": " + std::to_string(exit_status(checks)) + "}}\n";
  return out;
}

}  // namespace doctor
}  // namespace efacoll

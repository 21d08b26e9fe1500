#include "verdict.h"

#include <signal.h>

#include <cctype>
#include <cstdio>
#include <cstring>

namespace efacoll {
namespace fault {
namespace {

std::string ms(long long ns) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.0f ms", ns / 1e6);
  return buf;
}

std::string how_it_ended(const RankOutcome& r) {
  if (r.hung) return "HUNG (killed at the deadline)";
  if (r.stopped) return "killed after another rank had failed";
  if (r.signal) return std::string("killed by ") + strsignal(r.signal);
  return "exit " + std::to_string(r.exit_code);
}

// The problems with a survivor's error message ("" when it says what it must).
std::string message_problems(const std::string& m) {
  std::string missing;
  for (const char* word : {"allreduce", "communicator", "step"}) {
    if (m.find(word) == std::string::npos) missing += std::string(" '") + word + "'";
  }
  if (m.rfind("timeout:", 0) == 0) {
    const size_t at = m.find("did not answer: ");
    if (at == std::string::npos || !std::isdigit(static_cast<unsigned char>(m[at + 16])))
      missing += " 'did not answer: <ranks>'";
  }
  return missing.empty() ? "" : "message lacks" + missing;
}

std::string judge_rank(const LaunchOptions& o, const LaunchReport& report, const RankOutcome& r,
                       const Expectation& expect, std::string* line) {
  const WorkerResult& w = r.result;
  *line = "rank " + std::to_string(r.rank) + (o.netns.empty() ? "" : " (" + o.netns[r.rank] + ")") +
          ": " + how_it_ended(r) + ", " + (w.present ? w.status : "no result") + " in phase " +
          w.phase + " after " + std::to_string(w.calls) + " good calls";
  if (r.hung) return "it hung";
  if (o.fault.kind == Fault::Kind::kNone) {
    if (!w.message.empty()) *line += "\n    " + w.call + ": " + w.message;
    if (w.status != "ok" || r.exit_code != 0) return "it did not pass";
    return w.torn_down ? "" : "crashed while tearing down its engine";
  }
  if (o.fault.kind == Fault::Kind::kKill && r.rank == o.fault.rank) {
    return r.signal == SIGKILL && !w.present ? "" : "the victim was not killed mid-run";
  }
  if (!report.fault_injected) return "no fault was injected";
  const long long to_error = w.returned_ns - report.fault_ns;
  *line += "\n    error " + ms(to_error) + " after the fault, exit " +
           ms(static_cast<long long>(r.ended_ns) - w.returned_ns) + " after the error\n    " +
           w.call + ": " + w.message;
  if (w.status != "error") return "expected an error, got '" + w.status + "'";
  if (w.phase != "fault") return "failed before the fault";
  const auto limit = o.worker.timeout + expect.slack;
  if (to_error > std::chrono::nanoseconds(limit).count())
    return "error later than " + std::to_string(limit.count()) + " ms after the fault";
  if (r.ended_ns - w.returned_ns > std::chrono::nanoseconds(expect.exit_limit).count())
    return "took longer than " + std::to_string(expect.exit_limit.count()) + " ms to exit";
  if (r.stopped || r.signal) return "did not exit by itself";
  if (!w.torn_down) return "crashed while tearing down its engine";
  return message_problems(w.message);
}

}  // namespace

bool judge(const LaunchOptions& options, const LaunchReport& report, const Expectation& expect,
           std::string* text) {
  bool passed = true;
  if (!report.fault_note.empty()) {
    *text += "fault: " + report.fault_note + "\n";
    passed = false;
  }
  for (const RankOutcome& r : report.ranks) {
    std::string line;
    const std::string problem = judge_rank(options, report, r, expect, &line);
    *text += line + "\n";
    if (!problem.empty()) {
      *text += "    FAIL: " + problem + "\n";
      passed = false;
    }
  }
  *text += passed ? "PASS\n" : "FAIL\n";
  return passed;
}

}  // namespace fault
}  // namespace efacoll

// efacoll-doctor's output: aligned lines for people, one JSON object for scripts.
#pragma once
#include <string>

#include "doctor/doctor_check.h"

namespace efacoll {
namespace doctor {

struct ReportHeader {
  std::string version;  // efacoll's
  std::string host;
};

// "FAIL  efa        finding" lines, a "fix:" line under each that has one, then a summary.
// Every line starts with `prefix` (the host name under mpirun, where nodes' reports interleave).
std::string render_text(const ReportHeader& header, const Checks& checks,
                        const std::string& prefix = "");
// {"version", "host", "checks": [{"name", "status", "finding", "fix"}], "summary": {...}} on one
// line: under mpirun each node's report is one line of a JSON Lines stream.
std::string render_json(const ReportHeader& header, const Checks& checks);

}  // namespace doctor
}  // namespace efacoll

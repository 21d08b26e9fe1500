// What a fault test run must show, checked from the launcher's report, one line per rank.
#pragma once
#include <chrono>
#include <string>

#include "launcher.h"

namespace efacoll {
namespace fault {

// Without a fault: every rank passes every check. With one: every rank that was not killed
// returns an error (not a wrong result) within the collective timeout plus `slack` after the
// fault, whose message names the collective, the communicator, the step and, for a timeout,
// the ranks that did not answer; and it exits by itself within `exit_limit` after its error.
struct Expectation {
  std::chrono::milliseconds slack{2000};
  std::chrono::milliseconds exit_limit{10000};
};

// Appends one line per rank and the reasons for a failure to *text; true when it passed.
bool judge(const LaunchOptions& options, const LaunchReport& report, const Expectation& expect,
           std::string* text);

}  // namespace fault
}  // namespace efacoll

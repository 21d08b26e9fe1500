// A child process stopped and resumed (SIGSTOP, then SIGCONT), as a debugger or a job scheduler
// that suspends jobs does: for tests of what a stop must not be taken for.
#pragma once
#include <chrono>
#include <functional>
#include <string>

namespace efacoll {
namespace testing {

struct StoppedChildEnd {
  bool ended = false;  // false: still alive at the limit (then killed)
  int status = 0;      // as waitpid gives it
  double seconds_after_resume = 0;
  std::string said;  // its standard error
};

// Runs `body` in a child process, which exits with 0 when it returns; stops the child
// `stop_after` after it starts, for `stop_for`; then waits up to `limit` for it to end.
StoppedChildEnd run_stopped_child(const std::function<void()>& body,
                                  std::chrono::milliseconds stop_after,
                                  std::chrono::milliseconds stop_for,
                                  std::chrono::milliseconds limit);

}  // namespace testing
}  // namespace efacoll

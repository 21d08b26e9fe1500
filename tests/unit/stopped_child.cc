#include "stopped_child.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

namespace efacoll {
namespace testing {

StoppedChildEnd run_stopped_child(const std::function<void()>& body,
                                  std::chrono::milliseconds stop_after,
                                  std::chrono::milliseconds stop_for,
                                  std::chrono::milliseconds limit) {
  using Clock = std::chrono::steady_clock;
  StoppedChildEnd end;
  int err[2];
  if (pipe(err) != 0) return end;
  const pid_t child = fork();
  if (child < 0) return end;
  if (child == 0) {
    dup2(err[1], 2);
    body();
    _exit(0);
  }
  close(err[1]);
  std::this_thread::sleep_for(stop_after);
  kill(child, SIGSTOP);
  std::this_thread::sleep_for(stop_for);
  kill(child, SIGCONT);
  const auto resumed = Clock::now();
  while (waitpid(child, &end.status, WNOHANG) == 0) {
    if (Clock::now() - resumed > limit) {
      kill(child, SIGKILL);
      waitpid(child, &end.status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  end.ended = !(WIFSIGNALED(end.status) && WTERMSIG(end.status) == SIGKILL);
  end.seconds_after_resume = std::chrono::duration<double>(Clock::now() - resumed).count();
  char buf[4096];
  for (ssize_t n; (n = read(err[0], buf, sizeof(buf))) > 0;) end.said.append(buf, n);
  close(err[0]);
  return end;
}

}  // namespace testing
}  // namespace efacoll

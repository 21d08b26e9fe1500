#include "launcher.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>

#include "transport/fabric/shm_name.h"

namespace efacoll {
namespace fault {
namespace {

// A rank that failed before the fault leaves the others waiting in the bootstrap or in a
// collective: they get this long beyond the collective timeout to end by themselves.
constexpr std::chrono::seconds kGraceAfterFailure{10};

// SIGTERM or SIGINT (ctest's timeout, a ^C, the parent gone): the workers are killed and reaped
// and the directory removed before the launcher ends.
volatile sig_atomic_t interrupted = 0;

[[noreturn]] void child_main(const LaunchOptions& o, int rank, pid_t parent) {
  // The launcher's death (ctest's timeout, a ^C) takes the workers with it.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(125);
  signal(SIGTERM, SIG_DFL);
  signal(SIGINT, SIG_DFL);
  if (!o.netns.empty()) {
    const std::string path = "/var/run/netns/" + o.netns[rank];
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
      std::fprintf(stderr, "rank %d: cannot enter network namespace %s: %s\n", rank,
                   o.netns[rank].c_str(), std::strerror(errno));
      _exit(126);
    }
    close(fd);
  }
  _exit(run_worker(o.worker, rank));
}

bool all_started(const LaunchOptions& o, const LaunchReport& report) {
  for (const RankOutcome& r : report.ranks) {
    if (access(started_marker(o.worker.dir, r.rank).c_str(), F_OK) != 0) return false;
  }
  return true;
}

// A rank killed or ended by _exit leaves its shm regions: they would fill /dev/shm run after run.
void remove_shm_regions(pid_t pid) {
  const std::string prefix = shm_name_prefix(pid);
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm", ec)) {
    if (e.path().filename().string().rfind(prefix, 0) == 0) std::filesystem::remove(e.path(), ec);
  }
}

void inject(const LaunchOptions& o, LaunchReport* report) {
  report->fault_injected = true;
  report->fault_ns = monotonic_ns();
  if (o.fault.kind == Fault::Kind::kKill) {
    kill(report->ranks[o.fault.rank].pid, SIGKILL);
    remove_shm_regions(report->ranks[o.fault.rank].pid);
    return;
  }
  const int rc = std::system(o.fault.command.c_str());
  if (rc != 0) report->fault_note = "'" + o.fault.command + "' failed (" + std::to_string(rc) + ")";
}

// Reaps whoever has ended; returns how many are still running.
int reap(LaunchReport* report) {
  int running = 0;
  for (RankOutcome& r : report->ranks) {
    if (r.ended_ns) continue;
    int status = 0;
    if (waitpid(r.pid, &status, WNOHANG) != r.pid) {
      ++running;
      continue;
    }
    r.ended_ns = monotonic_ns();
    remove_shm_regions(r.pid);  // workers end with _exit, and the victim is killed
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  }
  return running;
}

void kill_remaining(LaunchReport* report, bool hung) {
  for (RankOutcome& r : report->ranks) {
    if (r.ended_ns) continue;
    kill(r.pid, SIGKILL);
    (hung ? r.hung : r.stopped) = true;
  }
  for (RankOutcome& r : report->ranks) {
    if (r.ended_ns) continue;
    int status = 0;
    waitpid(r.pid, &status, 0);
    remove_shm_regions(r.pid);
    r.ended_ns = monotonic_ns();
    r.signal = SIGKILL;
  }
}

bool failed_early(const RankOutcome& r) { return r.ended_ns && (r.exit_code != 0 || r.signal); }

}  // namespace

Status launch(const LaunchOptions& options, LaunchReport* report) {
  LaunchOptions o = options;
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/efacoll-fault-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr)
    return Status(Code::kInternal, "mkdtemp: " + std::string(std::strerror(errno)));
  o.worker.dir = pattern;
  std::fflush(nullptr);  // nothing buffered here is written twice by the children

  *report = LaunchReport();
  const pid_t self = getpid();
  signal(SIGTERM, [](int) { interrupted = 1; });
  signal(SIGINT, [](int) { interrupted = 1; });
  for (int rank = 0; rank < o.worker.size; ++rank) {
    RankOutcome r;
    r.rank = rank;
    r.pid = fork();
    if (r.pid == 0) child_main(o, rank, self);
    if (r.pid < 0) {
      kill_remaining(report, false);
      std::filesystem::remove_all(o.worker.dir);
      return Status(Code::kInternal, "fork: " + std::string(std::strerror(errno)));
    }
    report->ranks.push_back(r);
  }

  const auto start = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point started{}, first_failure{};
  const auto grace = o.worker.timeout + kGraceAfterFailure;
  while (reap(report) > 0) {
    const auto now = std::chrono::steady_clock::now();
    if (interrupted) {
      kill_remaining(report, false);
      std::filesystem::remove_all(o.worker.dir);
      return Status(Code::kInternal, "interrupted: every rank killed");
    }
    if (now - start > o.deadline) {
      kill_remaining(report, true);
      break;
    }
    if (first_failure == std::chrono::steady_clock::time_point{}) {
      for (const RankOutcome& r : report->ranks) {
        if (failed_early(r) && !report->fault_injected) first_failure = now;
      }
    } else if (now - first_failure > grace) {
      kill_remaining(report, false);
      break;
    }
    if (o.fault.kind != Fault::Kind::kNone && !report->fault_injected) {
      if (started == std::chrono::steady_clock::time_point{} && all_started(o, *report))
        started = now;
      if (started != std::chrono::steady_clock::time_point{} && now - started >= o.fault.after)
        inject(o, report);
    }
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, nullptr);
  }
  if (o.fault.kind != Fault::Kind::kNone && !report->fault_injected)
    report->fault_note = "no fault injected: the ranks never all reached the fault phase";
  for (RankOutcome& r : report->ranks) r.result = read_worker_result(o.worker.dir, r.rank);
  std::filesystem::remove_all(o.worker.dir);
  return Status::ok();
}

}  // namespace fault
}  // namespace efacoll

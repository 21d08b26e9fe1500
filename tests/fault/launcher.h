// Starts the ranks of a fault test as processes (each, where asked, in a network namespace of
// its own), injects one fault while they run, and collects how each ended. Nothing outlives
// it: workers die with the launcher (PR_SET_PDEATHSIG), and whatever is left at the deadline is
// killed and reported as a hang.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "efacoll/status.h"
#include "worker.h"

namespace efacoll {
namespace fault {

struct Fault {
  enum class Kind { kNone, kKill, kCommand };
  Kind kind = Kind::kNone;
  int rank = -1;        // kKill: the rank that gets SIGKILL
  std::string command;  // kCommand: run by /bin/sh (e.g. ip link set dev ... down)
  // After every rank has entered its fault phase.
  std::chrono::milliseconds after{300};
};

struct LaunchOptions {
  WorkerOptions worker;
  std::vector<std::string> netns;  // rank r enters netns[r] (ip netns names); empty: none
  Fault fault;
  std::chrono::seconds deadline{120};
};

struct RankOutcome {
  int rank = 0;
  pid_t pid = -1;
  int exit_code = -1;    // -1: did not exit normally
  int signal = 0;        // the signal that ended it
  bool hung = false;     // still running at the deadline: killed
  bool stopped = false;  // killed because another rank had already failed
  long long ended_ns = 0;
  WorkerResult result;
};

struct LaunchReport {
  std::vector<RankOutcome> ranks;
  bool fault_injected = false;
  long long fault_ns = 0;  // CLOCK_MONOTONIC, as the workers' returned_ns
  std::string fault_note;  // the command's failure, or why no fault was injected
};

Status launch(const LaunchOptions& options, LaunchReport* report);

}  // namespace fault
}  // namespace efacoll

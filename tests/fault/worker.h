// One rank of a fault test, run in a process of its own (forked by the launcher, perhaps inside
// a network namespace): its own Engine over a libfabric provider, a communicator through the
// file bootstrap, collectives checked against fault_data, and one result file for the launcher.
#pragma once
#include <chrono>
#include <string>
#include <vector>

#include "efacoll/types.h"

namespace efacoll {
namespace fault {

struct WorkerOptions {
  int size = 3;
  std::string dir;  // shared by the ranks: bootstrap files, markers, results
  std::string provider = "tcp";
  std::string domain;                       // tcp/udp: the interface; empty: the provider's first
  std::string protocol = "send";            // send | rdma | auto (EFACOLL_PROTOCOL)
  std::string algo = "ring";                // EFACOLL_ALGO's grammar
  std::chrono::milliseconds timeout{3000};  // EFACOLL_TIMEOUT
  size_t chunk_bytes = 65536;
  bool separate_hosts = false;  // each rank declares a node of its own
  // Check phase: every collective at every size, `repeat` times, each result compared.
  std::vector<CollKind> colls{CollKind::kAllreduce};
  std::vector<size_t> sizes;  // bytes per call
  int repeat = 1;
  // Fault phase (fault_bytes > 0): allreduce calls of this size back to back, each checked,
  // until one fails or fault_loop has passed. The launcher injects its fault meanwhile.
  size_t fault_bytes = 0;
  std::chrono::milliseconds fault_loop{20000};
};

// What a worker leaves in <dir>/result.<rank> (key=value lines), and reads back.
struct WorkerResult {
  bool present = false;
  std::string phase;          // setup | check | fault | done
  std::string status;         // ok | error | wrong | no-error (the fault phase ended without one)
  int calls = 0;              // calls that completed and compared equal
  std::string call;           // the call that failed
  long long returned_ns = 0;  // CLOCK_MONOTONIC when it returned
  std::string message;
  bool torn_down = false;  // the communicator and the engine were destroyed without a crash
};

// Returns the process exit status: 0 when the result is ok.
int run_worker(const WorkerOptions& options, int rank);
WorkerResult read_worker_result(const std::string& dir, int rank);
std::string started_marker(const std::string& dir, int rank);
long long monotonic_ns();

}  // namespace fault
}  // namespace efacoll

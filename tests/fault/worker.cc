#include "worker.h"

#include <time.h>

#include <cstdio>
#include <fstream>
#include <memory>

#include "common/log.h"
#include "efacoll/engine.h"
#include "fault_data.h"
#include "file_bootstrap.h"
#include "transport/fabric/fabric_info.h"
#include "transport/fabric/fabric_transport.h"
#include "tune/algo.h"

namespace efacoll {
namespace fault {
namespace {

// A peer that never arrives must not keep a worker forever: the launcher's deadline is longer.
constexpr std::chrono::milliseconds kBootstrapPatience{60000};

std::string result_path(const std::string& dir, int rank) {
  return dir + "/result." + std::to_string(rank);
}

void write_result(const std::string& dir, int rank, const WorkerResult& r) {
  std::string message = r.message;
  for (char& c : message)
    if (c == '\n') c = ' ';
  const std::string path = result_path(dir, rank), partial = path + ".partial";
  {
    std::ofstream f(partial);
    f << "phase=" << r.phase << "\nstatus=" << r.status << "\ncalls=" << r.calls
      << "\ncall=" << r.call << "\nreturned_ns=" << r.returned_ns << "\nmessage=" << message
      << "\n";
  }
  std::rename(partial.c_str(), path.c_str());
}

Status open_engine(const WorkerOptions& o, int rank, std::unique_ptr<Engine>* out) {
  FiInfoPtr info;
  EFACOLL_RETURN_IF_ERROR(find_provider(o.provider, &info, false, o.domain));
  FabricOptions fabric;
  if (o.protocol == "send") fabric.protocol = Protocol::kSendRecv;
  if (o.protocol == "rdma") fabric.protocol = Protocol::kRdma;
  std::unique_ptr<Transport> transport;
  EFACOLL_RETURN_IF_ERROR(open_fabric_transport(info.get(), fabric, &transport));
  EngineConfig config;
  config.timeout = o.timeout;
  config.chunk_bytes = o.chunk_bytes;
  config.chunk_forced = true;
  config.tune = false;
  EFACOLL_RETURN_IF_ERROR(parse_algo_overrides(o.algo, &config.algo));
  if (o.separate_hosts) config.node_name = "host" + std::to_string(rank);
  *out = std::make_unique<Engine>(std::move(transport), config);
  return Status::ok();
}

// Buffers of a failed call: an operation the provider would not cancel may still write into
// them, so they live until the process ends.
std::vector<Bytes>& kept_after_failure() {
  static std::vector<Bytes>* kept = new std::vector<Bytes>;
  return *kept;
}

// Runs one call and compares its result; fills *r on failure.
bool run_checked(Comm& comm, const CallSpec& call, WorkerResult* r) {
  const int rank = comm.rank(), n = comm.size();
  Bytes in = call_input(call, rank, n);
  Bytes want = call_expected(call, rank, n);
  Bytes out(want.size(), 0xa5);
  std::vector<size_t> recvcounts(n, call.count);
  CollArgs args;
  args.kind = call.kind;
  args.sendbuf = in.data();
  args.recvbuf = out.data();
  args.count = call.count;
  args.recvcounts = recvcounts.data();
  args.dtype = call.dtype;
  args.op = call.op;
  Status st = comm.run(args);
  r->returned_ns = monotonic_ns();
  r->call = describe(call);
  if (!st.is_ok()) {
    r->status = "error";
    r->message = st.to_string();
    kept_after_failure().push_back(std::move(in));
    kept_after_failure().push_back(std::move(out));
    return false;
  }
  std::string diff = first_difference(out, want, call.dtype);
  if (!diff.empty()) {
    r->status = "wrong";
    r->message = diff;
    return false;
  }
  ++r->calls;
  return true;
}

bool check_phase(const WorkerOptions& o, Comm& comm, WorkerResult* r) {
  r->phase = "check";
  size_t index = 0;
  for (int rep = 0; rep < o.repeat; ++rep) {
    for (size_t bytes : o.sizes) {
      for (CollKind kind : o.colls) {
        if (!run_checked(comm, call_for(kind, bytes, index++), r)) return false;
      }
    }
  }
  return true;
}

bool fault_phase(const WorkerOptions& o, int rank, Comm& comm, FileBootstrap& bootstrap,
                 WorkerResult* r) {
  r->phase = "fault";
  Status st = bootstrap.barrier();
  if (!st.is_ok()) {
    r->status = "error";
    r->message = "before the fault phase: " + st.to_string();
    return false;
  }
  std::ofstream(started_marker(o.dir, rank)) << monotonic_ns() << "\n";
  const CallSpec call = call_for(CollKind::kAllreduce, o.fault_bytes, 0);
  const auto until = std::chrono::steady_clock::now() + o.fault_loop;
  while (std::chrono::steady_clock::now() < until) {
    if (!run_checked(comm, call, r)) return false;
  }
  r->status = "no-error";
  r->message = "no call failed in " + std::to_string(o.fault_loop.count()) + " ms";
  return false;
}

}  // namespace

long long monotonic_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

std::string started_marker(const std::string& dir, int rank) {
  return dir + "/started." + std::to_string(rank);
}

int run_worker(const WorkerOptions& o, int rank) {
  log_set_rank(rank);
  WorkerResult r;
  r.phase = "setup";
  std::unique_ptr<Engine> engine;
  std::unique_ptr<Comm> comm;
  FileBootstrap bootstrap(o.dir, rank, o.size, kBootstrapPatience);
  Status st = open_engine(o, rank, &engine);
  if (st.is_ok()) st = engine->create_comm(bootstrap, &comm);
  if (!st.is_ok()) {
    r.status = "error";
    r.message = st.to_string();
    write_result(o.dir, rank, r);
    return 1;
  }
  bool ok = check_phase(o, *comm, &r);
  if (ok && o.fault_bytes > 0) ok = fault_phase(o, rank, *comm, bootstrap, &r);
  if (ok) {
    r.phase = "done";
    r.status = "ok";
    // Every endpoint stays open until all ranks are done with it (manual-progress providers
    // may still owe a peer an acknowledgement).
    st = bootstrap.barrier();
    if (!st.is_ok()) {
      r.status = "error";
      r.message = "final barrier: " + st.to_string();
      ok = false;
    }
  }
  // Written before the engine goes: the launcher times the error, and a teardown that hangs
  // shows as a process that outlives its result.
  write_result(o.dir, rank, r);
  comm.reset();
  engine.reset();
  std::ofstream(result_path(o.dir, rank), std::ios::app) << "torn_down=1\n";
  return ok ? 0 : 1;
}

WorkerResult read_worker_result(const std::string& dir, int rank) {
  WorkerResult r;
  std::ifstream f(result_path(dir, rank));
  std::string line;
  while (std::getline(f, line)) {
    r.present = true;
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "phase") r.phase = value;
    if (key == "status") r.status = value;
    if (key == "calls") r.calls = std::atoi(value.c_str());
    if (key == "call") r.call = value;
    if (key == "returned_ns") r.returned_ns = std::atoll(value.c_str());
    if (key == "message") r.message = value;
    if (key == "torn_down") r.torn_down = value == "1";
  }
  return r;
}

}  // namespace fault
}  // namespace efacoll

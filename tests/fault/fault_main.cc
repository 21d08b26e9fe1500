// efacoll_fault_test: ranks as processes over a libfabric provider, one fault injected while a
// collective runs, and a verdict on how every rank ended. Exit 0: passed; 1: failed; 77: cannot
// run here (provider missing), for ctest's SKIP_RETURN_CODE.
//
// SIGKILL of rank 1 mid-allreduce:
//   efacoll_fault_test --ranks 3 --provider tcp --domain lo --timeout-ms 3000
//                      --fault-bytes 64M --kill 1
// Exact results over impaired links between namespaces:
//   efacoll_fault_test --netns h0,h1,h2 --domain fab0 --sizes 8,64K,1M
//                      --colls allreduce,allgather,reduce_scatter
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "launcher.h"
#include "transport/fabric/fabric_info.h"
#include "verdict.h"

namespace efacoll {
namespace fault {
namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// 4096, 64K, 16M.
size_t parse_bytes(const std::string& s) {
  char* end = nullptr;
  size_t v = std::strtoull(s.c_str(), &end, 10);
  if (*end == 'K' || *end == 'k') v <<= 10;
  if (*end == 'M' || *end == 'm') v <<= 20;
  return v;
}

bool parse_coll(const std::string& name, CollKind* out) {
  for (CollKind k : {CollKind::kAllreduce, CollKind::kAllgather, CollKind::kReduceScatter}) {
    if (name == coll_name(k)) {
      *out = k;
      return true;
    }
  }
  return false;
}

const char kUsage[] =
    "usage: efacoll_fault_test [--ranks N] [--provider P] [--domain D] [--protocol "
    "send|rdma|auto]\n"
    "  [--algo A] [--timeout-ms T] [--chunk BYTES] [--colls C,...] [--sizes BYTES,...]\n"
    "  [--repeat R] [--fault-bytes BYTES] [--fault-loop-ms T] [--kill RANK | --command CMD]\n"
    "  [--fault-after-ms T] [--netns NS,...] [--deadline-s S] [--slack-ms T]\n";

bool parse(int argc, char** argv, LaunchOptions* o, Expectation* e) {
  WorkerOptions& w = o->worker;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) return false;
    const std::string v = argv[++i];
    const long n = std::atol(v.c_str());
    if (flag == "--ranks")
      w.size = static_cast<int>(n);
    else if (flag == "--provider")
      w.provider = v;
    else if (flag == "--domain")
      w.domain = v;
    else if (flag == "--protocol")
      w.protocol = v;
    else if (flag == "--algo")
      w.algo = v;
    else if (flag == "--timeout-ms")
      w.timeout = std::chrono::milliseconds(n);
    else if (flag == "--chunk")
      w.chunk_bytes = parse_bytes(v);
    else if (flag == "--repeat")
      w.repeat = static_cast<int>(n);
    else if (flag == "--fault-bytes")
      w.fault_bytes = parse_bytes(v);
    else if (flag == "--fault-loop-ms")
      w.fault_loop = std::chrono::milliseconds(n);
    else if (flag == "--fault-after-ms")
      o->fault.after = std::chrono::milliseconds(n);
    else if (flag == "--deadline-s")
      o->deadline = std::chrono::seconds(n);
    else if (flag == "--slack-ms")
      e->slack = std::chrono::milliseconds(n);
    else if (flag == "--kill") {
      o->fault.kind = Fault::Kind::kKill;
      o->fault.rank = static_cast<int>(n);
    } else if (flag == "--command") {
      o->fault.kind = Fault::Kind::kCommand;
      o->fault.command = v;
    } else if (flag == "--netns") {
      o->netns = split(v);
      w.separate_hosts = true;
    } else if (flag == "--sizes") {
      w.sizes.clear();
      for (const std::string& s : split(v)) w.sizes.push_back(parse_bytes(s));
    } else if (flag == "--colls") {
      w.colls.clear();
      for (const std::string& s : split(v)) {
        w.colls.emplace_back();
        if (!parse_coll(s, &w.colls.back())) return false;
      }
    } else {
      return false;
    }
  }
  if (w.size < 2 || (!o->netns.empty() && static_cast<int>(o->netns.size()) != w.size))
    return false;
  if (o->fault.kind == Fault::Kind::kKill && (o->fault.rank < 0 || o->fault.rank >= w.size))
    return false;
  // A fault needs a collective in flight to land in.
  return o->fault.kind == Fault::Kind::kNone || w.fault_bytes > 0;
}

// Asked in a child: libfabric initialised here would be inherited, half-set-up, by every worker.
bool provider_here(const std::string& provider, const std::string& domain) {
  const pid_t pid = fork();
  if (pid == 0) {
    FiInfoPtr info;
    _exit(find_provider(provider, &info, false, domain).is_ok() ? 0 : 1);
  }
  int status = 0;
  return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
         WEXITSTATUS(status) == 0;
}

std::string describe(const LaunchOptions& o) {
  const WorkerOptions& w = o.worker;
  std::string s = std::to_string(w.size) + " ranks over " + w.provider +
                  (w.domain.empty() ? "" : " (" + w.domain + ")") + ", protocol " + w.protocol +
                  ", algorithm " + w.algo + ", timeout " + std::to_string(w.timeout.count()) +
                  " ms, " + std::to_string(w.sizes.size()) + " sizes x " +
                  std::to_string(w.colls.size()) + " collectives x " + std::to_string(w.repeat);
  if (w.fault_bytes) s += "; then allreduce of " + std::to_string(w.fault_bytes) + " B in a loop";
  if (o.fault.kind == Fault::Kind::kKill) s += "; SIGKILL of rank " + std::to_string(o.fault.rank);
  if (o.fault.kind == Fault::Kind::kCommand) s += "; fault: " + o.fault.command;
  if (o.fault.kind != Fault::Kind::kNone)
    s += " " + std::to_string(o.fault.after.count()) + " ms into the loop";
  return s;
}

}  // namespace
}  // namespace fault
}  // namespace efacoll

int main(int argc, char** argv) {
  using namespace efacoll;
  using namespace efacoll::fault;
  LaunchOptions options;
  Expectation expect;
  // Whoever started us going (ctest's timeout, the namespace script killed) takes us along, and
  // the workers with us.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (!parse(argc, argv, &options, &expect)) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  // Only where every rank can see it: inside namespaces the workers find their own interfaces.
  if (options.netns.empty() && !provider_here(options.worker.provider, options.worker.domain)) {
    std::printf("SKIP: libfabric provider %s (domain %s) not available here\n",
                options.worker.provider.c_str(), options.worker.domain.c_str());
    return 77;
  }
  std::printf("%s\n", describe(options).c_str());
  std::fflush(stdout);
  LaunchReport report;
  Status st = launch(options, &report);
  if (!st.is_ok()) {
    std::printf("FAIL: %s\n", st.to_string().c_str());
    return 1;
  }
  std::string text;
  const bool passed = judge(options, report, expect, &text);
  std::fputs(text.c_str(), stdout);
  return passed ? 0 : 1;
}

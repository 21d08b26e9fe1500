// efacoll-doctor: will a job here use EFA and GPUDirect, and if not, why? Each check says OK,
// INFO, WARN or FAIL and how to fix it. Runs alone or under mpirun (then local rank 0 of each
// node reports, lines prefixed with the host name); never calls MPI_Init.
//   efacoll-doctor [--json] [--sysfs ROOT] [--dev ROOT]
// Exit status: 0 nothing failed, 1 a check failed, 2 bad usage.
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "doctor/doctor_checks.h"
#include "doctor/doctor_gather.h"
#include "doctor/doctor_report.h"

namespace {

constexpr char kUsage[] =
    "usage: efacoll-doctor [--json] [--sysfs ROOT] [--dev ROOT]\n"
    "  Checks whether a job here will use EFA and GPUDirect RDMA, and says why not.\n"
    "  --json        one JSON object instead of text\n"
    "  --sysfs ROOT  read sysfs from ROOT (default /sys)\n"
    "  --dev ROOT    read device files from ROOT (default /dev)\n"
    "  Under mpirun, local rank 0 of each node reports. Exit: 0 OK, 1 a check failed, 2 usage.\n";

struct Options {
  bool json = false;
  std::string sysfs = "/sys";
  std::string dev = "/dev";
};

// 0: parsed; 1: help printed; 2: bad usage.
int parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (!std::strcmp(a, "-h") || !std::strcmp(a, "--help")) {
      std::fputs(kUsage, stdout);
      return 1;
    }
    if (!std::strcmp(a, "--json")) {
      o->json = true;
    } else if (!std::strcmp(a, "--sysfs") && i + 1 < argc) {
      o->sysfs = argv[++i];
    } else if (!std::strcmp(a, "--dev") && i + 1 < argc) {
      o->dev = argv[++i];
    } else {
      std::fprintf(stderr, "efacoll-doctor: unexpected argument '%s'\n%s", a, kUsage);
      return 2;
    }
  }
  return 0;
}

// Allowed before MPI_Init (MPI 3.1, 8.1.1): the doctor never starts MPI.
std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int len = 0;
  if (MPI_Get_library_version(text, &len) != MPI_SUCCESS) return "";
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace efacoll::doctor;
  Options options;
  const int usage = parse(argc, argv, &options);
  if (usage) return usage == 1 ? 0 : 2;

  const efacoll::EnvMap env = efacoll::environment_snapshot();
  const int local_rank = launcher_local_rank(env);
  if (local_rank > 0) return 0;  // one report per node: local rank 0's

  Observation obs = observe(options.sysfs, options.dev, env);
  obs.mpi_version = mpi_library_version();
  const Checks checks = run_checks(obs);
  const ReportHeader header{EFACOLL_VERSION, obs.host};
  const std::string report =
      options.json ? render_json(header, checks)
                   : render_text(header, checks, local_rank == 0 ? obs.host + ": " : "");
  std::fputs(report.c_str(), stdout);
  return exit_status(checks);
}

// Machines for efacoll-doctor's checks: a fixture sysfs tree (bare, p4d, p5), a /dev-shaped tree,
// and what libfabric would say there (Debian's without efa, or AWS's with it).
#pragma once
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "doctor/doctor_checks.h"
#include "topo_fixture.h"

namespace efacoll {
namespace testing {

enum class Layout { kBare, kP4d, kP5 };

class DoctorMachine {
 public:
  // uverbs: entries in <dev>/infiniband (-1: one per EFA; 0: no such directory); nvidia:
  // <dev>/nvidiactl where there are GPUs.
  explicit DoctorMachine(Layout layout, int uverbs = -1, bool nvidia = true);
  ~DoctorMachine();
  DoctorMachine(const DoctorMachine&) = delete;
  DoctorMachine& operator=(const DoctorMachine&) = delete;

  // obs.node is read from the trees; obs.fabric is Debian's libfabric 1.17 (no efa) without EFA
  // devices and AWS's (efa with FI_HMEM) with them; no environment, Open MPI, kernel 6.1.
  doctor::Observation obs;
  doctor::Checks run() const { return doctor::run_checks(obs); }

  // A bare machine's live trees, to add devices to; observe() reads them into obs.node again.
  SysfsFixture& sysfs() { return *sysfs_; }
  void observe();

 private:
  std::unique_ptr<SysfsFixture> sysfs_;  // bare machines only
  std::string dev_;
};

doctor::FabricFacts debian_libfabric();
doctor::FabricFacts aws_libfabric(const std::vector<std::string>& efa_domains, bool hmem);

// The first check of that name; a failed assertion (and a dummy) when there is none.
doctor::Check find_check(const doctor::Checks& checks, const std::string& name);
bool has_check(const doctor::Checks& checks, const std::string& name);
std::string describe(const doctor::Checks& checks);
// The verdict is `v`, the finding contains `in_finding` and the fix `in_fix` ("": anything).
::testing::AssertionResult is_check(const doctor::Check& c, doctor::Verdict v,
                                    const std::string& in_finding = "",
                                    const std::string& in_fix = "");
// The first check of that name, judged as is_check does.
::testing::AssertionResult has_verdict(const doctor::Checks& checks, const std::string& name,
                                       doctor::Verdict v, const std::string& in_finding = "",
                                       const std::string& in_fix = "");

constexpr char kOpenMpiVersion[] =
    "Open MPI v4.1.6, package: Open MPI Distribution, ident: 4.1.6, repo rev: v4.1.6, Sep 30, "
    "2023\n";
constexpr char kIntelMpiVersion[] = "Intel(R) MPI Library 2021.10 for Linux* OS\n";
constexpr char kMpichVersion[] =
    "MPICH Version:      4.1.2\nMPICH Release date: Wed Jun  7 15:22:45 CDT 2023\nMPICH "
    "ABI:          15:1:3\nMPICH Device:       ch4:ofi\n";

}  // namespace testing
}  // namespace efacoll

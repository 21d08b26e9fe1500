#include "doctor_fixture.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <map>

#include "doctor/doctor_gather.h"
#include "doctor/doctor_report.h"

namespace efacoll {
namespace testing {
namespace {

void shell(const std::string& command) {
  if (std::system(command.c_str()) != 0) std::perror(command.c_str());
}

std::string make_dev_tree() {
  char tmpl[] = "/tmp/efacoll-dev-XXXXXX";
  return mkdtemp(tmpl);
}

// Device files as a container might (not) have them.
void fill_dev_tree(const std::string& dev, int uverbs, bool nvidia) {
  if (uverbs > 0) mkdir((dev + "/infiniband").c_str(), 0755);
  for (int i = 0; i < uverbs; ++i) std::ofstream(dev + "/infiniband/uverbs" + std::to_string(i));
  if (nvidia) std::ofstream(dev + "/nvidiactl");
}

void add_interfaces(const SysfsFixture& f) {
  shell("mkdir -p " + f.root() + "/class/net/eth0 " + f.root() + "/class/net/lo");
}

// p4d and p5 trees take hundreds of files: each is built once per test binary.
const SysfsFixture& instance_tree(Layout layout) {
  static std::map<Layout, std::unique_ptr<SysfsFixture>> trees;
  std::unique_ptr<SysfsFixture>& f = trees[layout];
  if (f) return *f;
  f = std::make_unique<SysfsFixture>(layout == Layout::kP5 ? "p5.48xlarge" : "p4d.24xlarge");
  layout == Layout::kP5 ? build_p5(f.get()) : build_p4d(f.get());
  add_interfaces(*f);
  return *f;
}

}  // namespace

DoctorMachine::DoctorMachine(Layout layout, int uverbs, bool nvidia) {
  dev_ = make_dev_tree();
  std::string root;
  if (layout == Layout::kBare) {
    sysfs_ = std::make_unique<SysfsFixture>("");
    add_interfaces(*sysfs_);
    root = sysfs_->root();
    fill_dev_tree(dev_, uverbs, false);
  } else {
    root = instance_tree(layout).root();
    fill_dev_tree(dev_, uverbs < 0 ? (layout == Layout::kP5 ? 32 : 4) : uverbs, nvidia);
  }
  obs.node = doctor::observe_node(root, dev_);
  std::vector<std::string> domains;
  for (const std::string& n : obs.node.efa_devices) domains.push_back(n + "-rdm");
  obs.fabric = domains.empty() ? debian_libfabric() : aws_libfabric(domains, true);
  obs.host = "node1";
  obs.kernel = "6.1.0-13-cloud-amd64";
  obs.mpi_version = kOpenMpiVersion;
}

DoctorMachine::~DoctorMachine() { shell("rm -rf " + dev_); }

void DoctorMachine::observe() { obs.node = doctor::observe_node(sysfs_->root(), dev_); }

doctor::FabricFacts debian_libfabric() {
  doctor::FabricFacts f;
  f.version = "1.17";
  f.path = "/usr/lib/x86_64-linux-gnu/libfabric.so.1";
  f.offered = {"tcp;ofi_rxm", "shm", "udp;ofi_rxd"};
  f.efa.name = "efa";
  return f;
}

doctor::FabricFacts aws_libfabric(const std::vector<std::string>& efa_domains, bool hmem) {
  doctor::FabricFacts f;
  f.version = "1.22";
  f.path = "/opt/amazon/efa/lib/libfabric.so.1";
  f.aws_path = f.path;
  f.offered = {"efa", "tcp;ofi_rxm", "shm"};
  f.efa = {"efa", true, "efa", true, hmem, efa_domains, {}};
  // As efacoll-doctor finds it on such a machine: GPU memory registers through efa.
  if (hmem) f.efa.gpu_trial = {true, true, "dma-buf"};
  return f;
}

doctor::Check find_check(const doctor::Checks& checks, const std::string& name) {
  for (const doctor::Check& c : checks) {
    if (c.name == name) return c;
  }
  ADD_FAILURE() << "no check named " << name << "\n" << describe(checks);
  return {name, doctor::Verdict::kInfo, "(missing)", ""};
}

bool has_check(const doctor::Checks& checks, const std::string& name) {
  for (const doctor::Check& c : checks) {
    if (c.name == name) return true;
  }
  return false;
}

::testing::AssertionResult is_check(const doctor::Check& c, doctor::Verdict v,
                                    const std::string& in_finding, const std::string& in_fix) {
  if (c.verdict == v && c.finding.find(in_finding) != std::string::npos &&
      c.fix.find(in_fix) != std::string::npos) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << "expected " << doctor::verdict_name(v) << " with finding containing '" << in_finding
         << "' and fix containing '" << in_fix << "'; got " << doctor::verdict_name(c.verdict)
         << " " << c.name << ": " << c.finding << " / fix: " << c.fix;
}

::testing::AssertionResult has_verdict(const doctor::Checks& checks, const std::string& name,
                                       doctor::Verdict v, const std::string& in_finding,
                                       const std::string& in_fix) {
  return is_check(find_check(checks, name), v, in_finding, in_fix);
}

std::string describe(const doctor::Checks& checks) {
  return doctor::render_text({"test", "node1"}, checks);
}

}  // namespace testing
}  // namespace efacoll

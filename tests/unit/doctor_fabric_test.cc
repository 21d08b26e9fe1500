// efacoll-doctor: EFA devices and provider, the loaded libfabric, GPUDirect.
#include <gtest/gtest.h>

#include "doctor_fixture.h"

namespace efacoll {
namespace testing {
namespace {

using doctor::Verdict;

TEST(DoctorFabric, BareMachineFailsOnNoEfaAndSaysNoGpu) {
  DoctorMachine m(Layout::kBare);
  const doctor::Checks checks = m.run();
  EXPECT_TRUE(has_verdict(checks, "efa", Verdict::kFail, "no EFA device", "EFACOLL_PROVIDER=tcp"));
  EXPECT_TRUE(has_verdict(checks, "efa", Verdict::kFail, "tcp;ofi_rxm, shm, udp;ofi_rxd"));
  EXPECT_TRUE(has_verdict(checks, "gpus", Verdict::kInfo, "no GPU"));
  EXPECT_TRUE(has_verdict(checks, "gpudirect", Verdict::kInfo, "no GPU"));
  EXPECT_TRUE(has_verdict(checks, "libfabric", Verdict::kOk));
  // Without EFA, the device files, locked memory and EFA's fork hazards do not apply.
  for (const char* name : {"devices", "memlock", "hugepages", "fork"}) {
    EXPECT_FALSE(has_check(checks, name)) << name;
  }
  int fails = 0;
  for (const doctor::Check& c : checks) fails += c.verdict == Verdict::kFail;
  EXPECT_EQ(fails, 1) << describe(checks);
  EXPECT_EQ(doctor::exit_status(checks), 1);
}

TEST(DoctorFabric, AnotherProviderOnPurposeWarnsInsteadOfFailing) {
  DoctorMachine m(Layout::kBare);
  m.obs.env["EFACOLL_PROVIDER"] = "tcp";
  m.obs.fabric.requested = {"tcp", true, "tcp;ofi_rxm", true, false, {"eth0", "lo"}, {}};
  const doctor::Checks checks = m.run();
  EXPECT_TRUE(has_verdict(checks, "efa", Verdict::kWarn, "NOT EFA"));
  EXPECT_TRUE(has_verdict(checks, "efa", Verdict::kWarn, "; no EFA device here"));
  EXPECT_EQ(doctor::exit_status(checks), 0) << describe(checks);
}

TEST(DoctorFabric, AnotherProviderBesideEfaSaysHowToGetEfaBack) {
  DoctorMachine m(Layout::kP4d);
  m.obs.env["EFACOLL_PROVIDER"] = "tcp";
  m.obs.fabric.requested = {"tcp", true, "tcp;ofi_rxm", true, false, {"eth0", "lo"}, {}};
  const doctor::Checks checks = m.run();
  EXPECT_TRUE(has_verdict(checks, "efa", Verdict::kWarn, "this host has 4 EFA devices",
                          "unset EFACOLL_PROVIDER"));
  EXPECT_TRUE(has_verdict(checks, "gpudirect", Verdict::kInfo, "provider tcp: GPU data is staged"));
}

TEST(DoctorFabric, ProviderThatIsNotOfferedFails) {
  DoctorMachine m(Layout::kBare);
  m.obs.env["EFACOLL_PROVIDER"] = "verbs";
  m.obs.fabric.requested.name = "verbs";
  EXPECT_TRUE(
      has_verdict(m.run(), "efa", Verdict::kFail, "EFACOLL_PROVIDER=verbs is not available"));
}

TEST(DoctorFabric, P5WithAwsLibfabricIsAllGood) {
  DoctorMachine m(Layout::kP5);
  const doctor::Checks checks = m.run();
  EXPECT_TRUE(has_verdict(checks, "efa", Verdict::kOk, "32 EFA devices (rdmap"));
  EXPECT_TRUE(has_verdict(checks, "efa", Verdict::kOk, "; efa provider: 32 domains"));
  EXPECT_TRUE(has_verdict(checks, "libfabric", Verdict::kOk, "/opt/amazon/efa/lib/libfabric"));
  EXPECT_TRUE(has_verdict(checks, "gpudirect", Verdict::kOk,
                          "efa has FI_HMEM (GPUDirect RDMA): a GPU buffer registered through it "
                          "(by dma-buf)"));
  EXPECT_EQ(doctor::exit_status(checks), 0) << describe(checks);
}

// From API 1.18 efa offers FI_HMEM wherever CUDA loads: only a registration proves it.
TEST(DoctorFabric, HmemOfferedButGpuRegistrationFailingIsNoGpuDirect) {
  DoctorMachine m(Layout::kP5);
  m.obs.fabric.efa.gpu_trial = {true, false, "device 0: fi_mr_regattr: Bad address"};
  const doctor::Check gdr = find_check(m.run(), "gpudirect");
  EXPECT_TRUE(is_check(gdr, Verdict::kWarn,
                       "efa offers FI_HMEM, but registering a GPU buffer through it failed "
                       "(device 0: fi_mr_regattr: Bad address)"));
  EXPECT_NE(gdr.finding.find("p5.48xlarge supports GPUDirect RDMA"), std::string::npos)
      << gdr.finding;
  EXPECT_NE(gdr.fix.find("nvidia-peermem"), std::string::npos) << gdr.fix;
  m.obs.env["EFACOLL_REQUIRE_GDR"] = "1";
  EXPECT_TRUE(has_verdict(m.run(), "gpudirect", Verdict::kFail, "EFACOLL_REQUIRE_GDR=1"));
}

TEST(DoctorFabric, HmemOfferedButNotTriedIsAWarningNotAnOk) {
  DoctorMachine m(Layout::kP5);
  m.obs.fabric.efa.gpu_trial = {false, false, "no usable GPU runtime: libcuda.so.1 not found"};
  EXPECT_TRUE(has_verdict(m.run(), "gpudirect", Verdict::kWarn,
                          "efa offers FI_HMEM, but no GPU buffer could be registered to confirm "
                          "it (no usable GPU runtime: libcuda.so.1 not found)"));
  m.obs.env["EFACOLL_REQUIRE_GDR"] = "1";
  EXPECT_TRUE(has_verdict(m.run(), "gpudirect", Verdict::kFail, "EFACOLL_REQUIRE_GDR=1"));
}

TEST(DoctorFabric, AnotherProviderWhoseGpuRegistrationWorksTakesDevicePointers) {
  DoctorMachine m(Layout::kP4d);
  m.obs.env["EFACOLL_PROVIDER"] = "shm";
  m.obs.fabric.requested = {"shm", true, "shm", true, true, {"shm"}, {true, true, "dma-buf"}};
  EXPECT_TRUE(has_verdict(m.run(), "gpudirect", Verdict::kInfo,
                          "provider shm offers FI_HMEM and a GPU buffer registered through it "
                          "(by dma-buf): device pointers go to it"));
  m.obs.fabric.requested.gpu_trial = {true, false, "device 0: fi_mr_regattr: Invalid argument"};
  EXPECT_TRUE(has_verdict(m.run(), "gpudirect", Verdict::kInfo,
                          "provider shm: GPU data is staged through host memory unless it has "
                          "FI_HMEM and a trial registration at MPI_Init succeeds (EFACOLL_HMEM) "
                          "(it offers FI_HMEM, but registering a GPU buffer through it failed"));
}

TEST(DoctorFabric, EfaDevicesButDebianLibfabricFailsAndPointsAtAws) {
  DoctorMachine m(Layout::kP5);
  m.obs.fabric = debian_libfabric();
  m.obs.fabric.aws_path = "/opt/amazon/efa/lib64/libfabric.so.1";
  const doctor::Checks checks = m.run();
  EXPECT_TRUE(has_verdict(checks, "efa", Verdict::kFail, "offers no efa provider"));
  EXPECT_EQ(find_check(checks, "efa").fix,
            "LD_LIBRARY_PATH=/opt/amazon/efa/lib64:$LD_LIBRARY_PATH");
  EXPECT_TRUE(has_verdict(checks, "libfabric", Verdict::kWarn,
                          "AWS's libfabric is at /opt/amazon/efa/lib64",
                          "LD_LIBRARY_PATH=/opt/amazon/efa/lib64"));
}

TEST(DoctorFabric, NoAwsInstallSaysToInstallIt) {
  DoctorMachine m(Layout::kP4d);
  m.obs.fabric = debian_libfabric();
  const doctor::Checks checks = m.run();
  EXPECT_TRUE(has_verdict(checks, "efa", Verdict::kFail, "", "efa_installer.sh"));
  // Debian's 1.17 with EFA devices and no AWS install: too old for native RDMA writes.
  EXPECT_TRUE(has_verdict(checks, "libfabric", Verdict::kWarn, "before 1.18"));
}

TEST(DoctorFabric, AwsLibfabricWithoutEfaSaysHowToFindOutWhy) {
  DoctorMachine m(Layout::kP4d);
  m.obs.fabric.efa = debian_libfabric().efa;  // not found
  EXPECT_TRUE(has_verdict(m.run(), "efa", Verdict::kFail, "", "fi_info -p efa"));
}

TEST(DoctorFabric, FiProviderHidingEfaIsNamed) {
  DoctorMachine m(Layout::kP5);
  m.obs.fabric.efa = debian_libfabric().efa;  // not found
  m.obs.env["FI_PROVIDER"] = "tcp";
  EXPECT_TRUE(
      has_verdict(m.run(), "efa", Verdict::kFail, "FI_PROVIDER=tcp hides it", "unset FI_PROVIDER"));
}

TEST(DoctorFabric, EfaInSysfsButNoDeviceFilesPointsAtTheContainer) {
  DoctorMachine m(Layout::kP5, 0);
  m.obs.fabric.efa = debian_libfabric().efa;  // not found
  EXPECT_TRUE(has_verdict(m.run(), "efa", Verdict::kFail, "/infiniband/uverbs* device"));
}

TEST(DoctorFabric, NoHmemOnGdrInstanceWarnsAndRequireGdrFails) {
  DoctorMachine m(Layout::kP5);
  m.obs.fabric.efa.hmem = false;
  const doctor::Check gdr = find_check(m.run(), "gpudirect");
  EXPECT_TRUE(is_check(gdr, Verdict::kWarn, "p5.48xlarge supports GPUDirect RDMA"));
  EXPECT_EQ(gdr.fix.find("FI_EFA_USE_DEVICE_RDMA"), std::string::npos) << "not with 1.22";
  m.obs.env["EFACOLL_REQUIRE_GDR"] = "1";
  EXPECT_TRUE(has_verdict(m.run(), "gpudirect", Verdict::kFail, "EFACOLL_REQUIRE_GDR=1"));
}

TEST(DoctorFabric, Libfabric117WithoutHmemNamesDeviceRdma) {
  DoctorMachine m(Layout::kP4d);
  m.obs.fabric.efa.hmem = false;
  m.obs.fabric.version = "1.17";
  const doctor::Checks checks = m.run();
  EXPECT_TRUE(has_verdict(checks, "gpudirect", Verdict::kWarn, "", "FI_EFA_USE_DEVICE_RDMA=1"));
  EXPECT_TRUE(has_verdict(checks, "libfabric", Verdict::kWarn, "before 1.18"));
}

TEST(DoctorFabric, NoGdrExpectedOnOtherInstancesIsInformation) {
  DoctorMachine m(Layout::kP5);
  m.obs.node.topo.product = "g5.48xlarge";
  m.obs.fabric.efa.hmem = false;
  EXPECT_TRUE(has_verdict(m.run(), "gpudirect", Verdict::kInfo, "is not one that has GPUDirect"));
}

}  // namespace
}  // namespace testing
}  // namespace efacoll

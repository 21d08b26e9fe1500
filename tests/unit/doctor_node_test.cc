// efacoll-doctor: GPUs and their NICs, containers without device files, locked memory.
#include <gtest/gtest.h>

#include "doctor_fixture.h"

namespace efacoll {
namespace testing {
namespace {

using doctor::Verdict;

TEST(DoctorNode, P5GpuLinesNameFourNicsAndNvlinkPeers) {
  DoctorMachine m(Layout::kP5);
  const doctor::Checks checks = m.run();
  EXPECT_EQ(find_check(checks, "instance").finding,
            "p5.48xlarge (has GPUDirect RDMA), kernel 6.1.0-13-cloud-amd64");
  EXPECT_TRUE(has_verdict(checks, "gpus", Verdict::kOk, "8 GPUs (NVIDIA 10de:2330)"));
  EXPECT_EQ(find_check(checks, "gpu0").finding,
            "0000:53:00.0 NUMA 0; nearest NICs rdmap79s0, rdmap80s0, rdmap81s0, rdmap82s0 (PXB); "
            "NVLink GPU1-7");
  EXPECT_TRUE(has_verdict(checks, "gpu7", Verdict::kOk, "NUMA 1"));
  EXPECT_TRUE(has_verdict(checks, "gpu4", Verdict::kOk, "NVLink GPU0-3,5-7"));
  EXPECT_FALSE(has_check(checks, "gpu8"));
}

TEST(DoctorNode, P4dGpusShareOneNicOnTheirRootComplex) {
  DoctorMachine m(Layout::kP4d);
  EXPECT_TRUE(has_verdict(m.run(), "gpu1", Verdict::kOk, "nearest NIC rdmap16s27 (PHB)"));
}

TEST(DoctorNode, GpuWithEveryNicAcrossSocketsWarns) {
  DoctorMachine m(Layout::kBare);
  SysfsFixture& f = m.sysfs();
  f.add_gpu("pci0000:d7/0000:d7:00.0/0000:d8:00.0", 1);
  f.add_efa("pci0000:17/0000:17:00.0/0000:18:00.0", 0, "rdmap24s0");
  f.add_efa("pci0000:27/0000:27:00.0/0000:28:00.0", 0, "rdmap40s0");
  m.observe();
  EXPECT_TRUE(has_verdict(m.run(), "gpu0", Verdict::kWarn, "(SYS)", "NUMA node 1"));
}

TEST(DoctorNode, OneNicAcrossSocketsIsNotAWarning) {
  DoctorMachine m(Layout::kBare);
  build_pcie_box(&m.sysfs());
  m.observe();
  m.obs.node.dev_nvidia = true;
  const doctor::Checks checks = m.run();
  EXPECT_TRUE(has_verdict(checks, "gpu1", Verdict::kOk, "mlx5_0 (SYS)"));
  EXPECT_TRUE(has_verdict(checks, "gpus", Verdict::kOk, "no NVLink peers"));
}

TEST(DoctorNode, ContainerWithoutDeviceFiles) {
  DoctorMachine none(Layout::kP5, 0);
  EXPECT_TRUE(has_verdict(none.run(), "devices", Verdict::kFail,
                          "container without the EFA devices", "EFA device plugin"));
  EXPECT_TRUE(
      has_verdict(none.run(), "devices", Verdict::kFail, "/infiniband is missing", "--device"));
  DoctorMachine some(Layout::kP5, 4);
  EXPECT_TRUE(has_verdict(some.run(), "devices", Verdict::kWarn, "only 4 uverbs devices"));
  DoctorMachine all(Layout::kP4d);
  EXPECT_TRUE(has_verdict(all.run(), "devices", Verdict::kOk, "/infiniband: uverbs 4, EFA "));
}

TEST(DoctorNode, GpusWithoutDriverFilesWarn) {
  DoctorMachine m(Layout::kP5, -1, false);
  EXPECT_TRUE(has_verdict(m.run(), "gpus", Verdict::kWarn, "/nvidiactl", "--gpus all"));
}

TEST(DoctorNode, LockedMemoryLimitWarnsWithEfa) {
  DoctorMachine m(Layout::kP4d);
  EXPECT_TRUE(has_verdict(m.run(), "memlock", Verdict::kOk));
  m.obs.memlock = 64 << 10;
  EXPECT_TRUE(has_verdict(m.run(), "memlock", Verdict::kWarn, "64 KiB", "ulimit -l unlimited"));
  EXPECT_TRUE(has_verdict(m.run(), "memlock", Verdict::kWarn, "", "--ulimit memlock=-1"));
}

}  // namespace
}  // namespace testing
}  // namespace efacoll

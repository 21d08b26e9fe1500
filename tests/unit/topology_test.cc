#include "topo/topology.h"

#include <gtest/gtest.h>

#include "topo/nvlink_peers.h"
#include "topo_fixture.h"

namespace efacoll {
namespace {

PciDevice dev(std::vector<std::string> path, int numa) {
  PciDevice d;
  d.path = std::move(path);
  d.bdf = d.path.back();
  d.numa = numa;
  return d;
}

TEST(PciDistance, NcclLevels) {
  auto gpu = dev({"pci0000:44", "a", "b", "p4", "gpu"}, 0);
  EXPECT_EQ(pci_distance(gpu, dev({"pci0000:44", "a", "b", "p4", "nic"}, 0)), PathType::kPix);
  EXPECT_EQ(pci_distance(gpu, dev({"pci0000:44", "a", "b", "p0", "nic"}, 0)), PathType::kPxb);
  EXPECT_EQ(pci_distance(gpu, dev({"pci0000:44", "x", "nic"}, 0)), PathType::kPhb);
  EXPECT_EQ(pci_distance(gpu, dev({"pci0000:55", "nic"}, 0)), PathType::kNode);
  EXPECT_EQ(pci_distance(gpu, dev({"pci0000:97", "nic"}, 1)), PathType::kSys);
}

TEST(NvlinkPeers, BusIdsAreNormalised) {
  EXPECT_EQ(normalize_bdf("00000000:53:00.0"), "0000:53:00.0");
  EXPECT_EQ(normalize_bdf("0000:CA:00.0"), "0000:ca:00.0");
}

TEST(Topology, P4dPairsGpusOnEachEfa) {
  testing::SysfsFixture f("p4d.24xlarge");
  testing::build_p4d(&f);
  Topology t = detect_topology(f.root());
  EXPECT_EQ(t.product, "p4d.24xlarge");
  ASSERT_EQ(t.gpus.size(), 8u) << t.describe();
  ASSERT_EQ(t.nics.size(), 4u) << "the ENA and the NVMe drive are not RDMA NICs\n" << t.describe();
  const char* expected[] = {"rdmap16s27",  "rdmap16s27",  "rdmap32s27",  "rdmap32s27",
                            "rdmap144s27", "rdmap144s27", "rdmap160s27", "rdmap160s27"};
  for (int g = 0; g < 8; ++g) {
    ASSERT_EQ(t.gpu_nics[g].size(), 1u) << t.describe();
    EXPECT_EQ(t.nics[t.gpu_nics[g][0]].name, expected[g]) << "GPU" << g;
    EXPECT_EQ(t.gpu_nic_distance[g], PathType::kPhb);
    EXPECT_EQ(t.gpus[g].nvlink_peers.size(), 7u) << "NVSwitch joins every GPU";
  }
  EXPECT_EQ(t.gpus[0].pci.bdf, "0000:10:1c.0");
  EXPECT_EQ(t.gpus[7].pci.bdf, "0000:a0:1d.0");
  EXPECT_EQ(t.gpus[5].pci.numa, 1);
  EXPECT_EQ(t.nics[0].domain, "rdmap144s27-rdm");  // directory order, not bus order
}

TEST(Topology, P5GivesEachGpuItsFourEfas) {
  testing::SysfsFixture f("p5.48xlarge");
  testing::build_p5(&f);
  Topology t = detect_topology(f.root());
  ASSERT_EQ(t.gpus.size(), 8u);
  ASSERT_EQ(t.nics.size(), 32u);
  for (int g = 0; g < 8; ++g) {
    const unsigned b = 0x44 + 0x11 * g;
    ASSERT_EQ(t.gpu_nics[g].size(), 4u) << t.describe();
    EXPECT_EQ(t.gpu_nic_distance[g], PathType::kPxb);
    for (int n : t.gpu_nics[g]) {
      const std::string& name = t.nics[n].name;
      int bus = std::stoi(name.substr(5, name.size() - 7));
      EXPECT_GE(bus, static_cast<int>(b + 0x0b)) << "GPU" << g << " got " << name;
      EXPECT_LE(bus, static_cast<int>(b + 0x0e)) << "GPU" << g << " got " << name;
    }
  }
  EXPECT_EQ(t.gpus[0].pci.bdf, "0000:53:00.0");
  EXPECT_EQ(t.gpus[1].pci.bdf, "0000:64:00.0");
  EXPECT_EQ(t.gpus[7].pci.bdf, "0000:ca:00.0");
  EXPECT_NE(t.describe().find("GPU0 0000:53:00.0 NUMA 0 NVLink GPU1,2,3,4,5,6,7; nearest NICs "
                              "rdmap79s0 rdmap80s0 rdmap81s0 rdmap82s0 (PXB)"),
            std::string::npos)
      << t.describe();
}

TEST(Topology, PcieBoxFallsBackToTheNearestSocket) {
  testing::SysfsFixture f("");
  testing::build_pcie_box(&f);
  Topology t = detect_topology(f.root());
  ASSERT_EQ(t.gpus.size(), 2u);
  ASSERT_EQ(t.nics.size(), 1u);
  EXPECT_EQ(t.nics[0].domain, "mlx5_0");
  EXPECT_EQ(t.gpu_nic_distance[0], PathType::kNode);
  EXPECT_EQ(t.gpu_nic_distance[1], PathType::kSys);
  EXPECT_TRUE(t.gpus[0].nvlink_peers.empty());
  EXPECT_NE(t.describe().find("instance unknown"), std::string::npos);
}

TEST(Topology, EmptyTreeMeansNothingFound) {
  testing::SysfsFixture f("");
  Topology t = detect_topology(f.root());
  EXPECT_TRUE(t.gpus.empty());
  EXPECT_TRUE(t.nics.empty());
}

}  // namespace
}  // namespace efacoll

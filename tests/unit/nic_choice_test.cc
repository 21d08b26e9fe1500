// GPU -> NIC choice and the GPU ring on the p4d, p5 and PCIe-only fixture trees.
#include "topo/nic_choice.h"

#include <gtest/gtest.h>

#include "topo/rings.h"
#include "topo_fixture.h"

namespace efacoll {
namespace {

// What the efa provider would list for a fixture's EFA devices.
std::vector<std::string> efa_domains(const Topology& t) {
  std::vector<std::string> d;
  for (const Nic& n : t.nics) d.push_back(n.domain);
  return d;
}

Topology fixture(const std::string& product, void (*build)(testing::SysfsFixture*)) {
  testing::SysfsFixture f(product);
  build(&f);
  return detect_topology(f.root());
}

TEST(NicChoice, P4dGpuPairsShareTheirEfa) {
  Topology t = fixture("p4d.24xlarge", testing::build_p4d);
  const char* expected[] = {"rdmap16s27",  "rdmap16s27",  "rdmap32s27",  "rdmap32s27",
                            "rdmap144s27", "rdmap144s27", "rdmap160s27", "rdmap160s27"};
  for (int g = 0; g < 8; ++g) {
    NicChoice c = choose_nic("auto", t, g, 0, 1, efa_domains(t));
    EXPECT_EQ(c.domains, std::vector<std::string>{std::string(expected[g]) + "-rdm"}) << c.why;
    EXPECT_NE(c.why.find("PHB"), std::string::npos) << c.why;
  }
}

bool nearest_to(const Topology& t, int gpu, const std::string& domain) {
  for (int n : t.gpu_nics[gpu]) {
    if (t.nics[n].domain == domain) return true;
  }
  return false;
}

TEST(NicChoice, P5RankAloneOnItsGpuStripesOverItsFourEfas) {
  Topology t = fixture("p5.48xlarge", testing::build_p5);
  for (int g = 0; g < 8; ++g) {
    NicChoice c = choose_nic("auto", t, g, 0, 1, efa_domains(t));
    ASSERT_EQ(c.domains.size(), 4u) << c.why;
    for (const std::string& d : c.domains) EXPECT_TRUE(nearest_to(t, g, d)) << d;
  }
}

TEST(NicChoice, P5RanksSharingAGpuDivideItsEfas) {
  Topology t = fixture("p5.48xlarge", testing::build_p5);
  for (int sharers : {2, 4, 5}) {
    std::vector<std::string> seen;
    for (int sharer = 0; sharer < sharers; ++sharer) {
      NicChoice c = choose_nic("auto", t, 3, sharer, sharers, efa_domains(t));
      ASSERT_EQ(c.domains.size(), sharers <= 4 ? 4u / sharers : 1u) << c.why;
      for (const std::string& d : c.domains) {
        EXPECT_TRUE(nearest_to(t, 3, d)) << d;
        if (sharer < 4) {
          EXPECT_EQ(std::count(seen.begin(), seen.end(), d), 0) << d << " twice";
        }
        seen.push_back(d);
      }
    }
    if (sharers == 5) {
      EXPECT_EQ(seen[4], seen[0]) << "the fifth sharer wraps around";
    }
  }
}

TEST(NicChoice, FallsBackToTheProvidersDomainWhenItCannotTell) {
  Topology p5 = fixture("p5.48xlarge", testing::build_p5);
  EXPECT_TRUE(choose_nic("auto", p5, -1, 0, 1, efa_domains(p5)).domains.empty());
  EXPECT_NE(choose_nic("auto", p5, -1, 0, 1, efa_domains(p5)).why.find("unknown"),
            std::string::npos);
  Topology box = fixture("pcie-box", testing::build_pcie_box);
  const std::vector<std::string> tcp = {"eth0", "lo"};
  EXPECT_TRUE(choose_nic("auto", box, 0, 0, 1, tcp).domains.empty())
      << "its InfiniBand card is not tcp's";
  EXPECT_EQ(choose_nic("lo", box, 0, 0, 1, tcp).domains, std::vector<std::string>{"lo"});
  EXPECT_EQ(choose_nic("eth0,lo", box, 0, 0, 1, tcp).domains,
            (std::vector<std::string>{"eth0", "lo"}));
}

TEST(NicChoice, GpuByBusIdAcceptsCudaAndSysfsSpellings) {
  Topology t = fixture("p5.48xlarge", testing::build_p5);
  EXPECT_EQ(gpu_by_bus_id(t, "00000000:CA:00.0"), 7);
  EXPECT_EQ(gpu_by_bus_id(t, "0000:53:00.0"), 0);
  EXPECT_EQ(gpu_by_bus_id(t, "0000:99:00.0"), -1);
}

TEST(GpuRing, NvSwitchNodesRingInIndexOrderOverNvlink) {
  for (auto [product, build] : {std::make_pair("p4d.24xlarge", testing::build_p4d),
                                std::make_pair("p5.48xlarge", testing::build_p5)}) {
    GpuRing r = intra_node_ring(fixture(product, build));
    EXPECT_TRUE(r.all_nvlink) << product << ": " << r.describe();
    EXPECT_EQ(r.order, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7})) << product;
  }
  Topology p5 = fixture("p5.48xlarge", testing::build_p5);
  EXPECT_NE(p5.describe().find("ring GPU0 -NVLink- GPU1 -NVLink- GPU2"), std::string::npos)
      << "the topology report shows the ring";
}

TEST(GpuRing, PcieBoxCrossesSocketsOnlyWhereItMust) {
  GpuRing r = intra_node_ring(fixture("pcie-box", testing::build_pcie_box));
  EXPECT_FALSE(r.all_nvlink);
  EXPECT_EQ(r.order, (std::vector<int>{0, 1}));
  EXPECT_EQ(r.hop[0], "SYS") << r.describe();
}

// A partial NVLink mesh (DGX-1 style): the ring must follow the links, not the index order.
TEST(GpuRing, PartialMeshFollowsTheLinks) {
  Topology t;
  t.gpus.resize(4);
  const std::vector<std::vector<int>> links = {{2, 3}, {2, 3}, {0, 1}, {0, 1}};
  for (int g = 0; g < 4; ++g) {
    t.gpus[g].index = g;
    t.gpus[g].nvlink_peers = links[g];
    t.gpus[g].pci.path = {"pci0000:00", "gpu" + std::to_string(g)};
  }
  GpuRing r = intra_node_ring(t);
  EXPECT_TRUE(r.all_nvlink) << r.describe();
  EXPECT_EQ(r.order, (std::vector<int>{0, 2, 1, 3}));
  EXPECT_EQ(r.describe(), "GPU0 -NVLink- GPU2 -NVLink- GPU1 -NVLink- GPU3 -NVLink- GPU0");
}

}  // namespace
}  // namespace efacoll

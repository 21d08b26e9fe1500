// GPU -> NIC choice and the GPU ring on the p4d, p5 and PCIe-only fixture trees.
#include "topo/nic_choice.h"

#include <gtest/gtest.h>

#include <set>

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

// What each rank of a node opens when the node gathered these contexts' GPUs (by local rank,
// -1: no context), as every rank computes it in MPI_Init.
std::vector<NicChoice> node_choices(const Topology& t, const std::vector<int>& contexts) {
  std::vector<NicChoice> choices;
  for (int r = 0; r < static_cast<int>(contexts.size()); ++r) {
    choices.push_back(choose_node_rank_nic("auto", t, contexts, r, efa_domains(t)));
  }
  return choices;
}

std::set<std::string> distinct_domains(const std::vector<NicChoice>& choices) {
  std::set<std::string> all;
  for (const NicChoice& c : choices) all.insert(c.domains.begin(), c.domains.end());
  return all;
}

// Each rank r of the node stripes over the four EFAs nearest to GPU gpu_of[r]: 32 NICs in all.
void expect_each_rank_on_its_own_gpu(const Topology& t, const std::vector<NicChoice>& choices,
                                     const std::vector<int>& gpu_of) {
  ASSERT_EQ(choices.size(), gpu_of.size());
  for (size_t r = 0; r < choices.size(); ++r) {
    ASSERT_EQ(choices[r].domains.size(), 4u) << "rank " << r << ": " << choices[r].why;
    for (const std::string& d : choices[r].domains) {
      EXPECT_TRUE(nearest_to(t, gpu_of[r], d)) << "rank " << r << ": " << d;
    }
  }
  EXPECT_EQ(distinct_domains(choices).size(), 32u);
}

// cudaSetDevice before MPI_Init: each rank's context names the GPU it chose, and it gets that
// GPU's four EFAs, whatever the mapping of local ranks to GPUs.
TEST(RankGpuChoice, P5DeviceChosenBeforeMpiInitIsKept) {
  Topology t = fixture("p5.48xlarge", testing::build_p5);
  const std::vector<int> own = {0, 1, 2, 3, 4, 5, 6, 7};
  std::vector<NicChoice> choices = node_choices(t, own);
  expect_each_rank_on_its_own_gpu(t, choices, own);
  EXPECT_NE(choices[3].why.find("GPU 3 from this rank's CUDA context"), std::string::npos)
      << choices[3].why;
  const std::vector<int> reversed = {7, 6, 5, 4, 3, 2, 1, 0};
  expect_each_rank_on_its_own_gpu(t, node_choices(t, reversed), reversed);
}

// cudaSetDevice after MPI_Init: at MPI_Init a rank has no context, or (libfabric's efa having
// probed GPUDirect on the current device) every rank's context is on device 0. Either way rank
// r takes GPU r: the node's eight GPUs and 32 EFAs, not GPU 0's four.
TEST(RankGpuChoice, P5DeviceChosenAfterMpiInitFollowsTheLocalRank) {
  Topology t = fixture("p5.48xlarge", testing::build_p5);
  const std::vector<int> by_local_rank = {0, 1, 2, 3, 4, 5, 6, 7};
  for (int probed : {-1, 0, 5}) {
    SCOPED_TRACE("every rank's context on " + std::to_string(probed));
    std::vector<NicChoice> choices = node_choices(t, std::vector<int>(8, probed));
    expect_each_rank_on_its_own_gpu(t, choices, by_local_rank);
    int near_gpu0 = 0;
    for (const std::string& d : distinct_domains(choices)) near_gpu0 += nearest_to(t, 0, d);
    EXPECT_EQ(near_gpu0, 4) << "only rank 0 is on GPU 0's EFAs";
    for (const NicChoice& c : choices) {
      EXPECT_NE(c.why.find("from local rank"), std::string::npos) << c.why;
      if (probed >= 0) {
        EXPECT_NE(c.why.find("not the application's choice"), std::string::npos) << c.why;
      }
    }
  }
}

void build_one_gpu(testing::SysfsFixture* f) {
  f->add_gpu("pci0000:00/0000:00:1e.0", 0);
  f->add_efa("pci0000:00/0000:00:1f.0", 0, "rdmap0s31");
}

// One GPU, two ranks, both contexts on it: they share it (and its one EFA), context or not.
TEST(RankGpuChoice, OneGpuMachineRanksShareItsGpu) {
  Topology t = fixture("g5.8xlarge", build_one_gpu);
  ASSERT_EQ(t.gpus.size(), 1u);
  ASSERT_EQ(t.nics.size(), 1u);
  for (const std::vector<int>& contexts : {std::vector<int>{0, 0}, std::vector<int>{-1, -1}}) {
    for (int r = 0; r < 2; ++r) {
      const RankGpu g = choose_rank_gpu(contexts, r, 1);
      EXPECT_EQ(g.gpu, 0) << g.why;
      if (contexts[r] == 0) {
        EXPECT_NE(g.why.find("from this rank's CUDA context"), std::string::npos) << g.why;
      }
      const NicChoice c = choose_node_rank_nic("auto", t, contexts, r, efa_domains(t));
      EXPECT_EQ(c.domains, efa_domains(t)) << c.why;
      EXPECT_NE(c.why.find("2 rank(s) on that GPU"), std::string::npos) << c.why;
    }
  }
}

// Contexts that name different GPUs are the application's choices, even where ranks share a
// GPU; a rank without one takes its local rank, and shares with whoever chose that GPU.
TEST(RankGpuChoice, MixedContextsKeepRealChoices) {
  Topology t = fixture("p5.48xlarge", testing::build_p5);
  // Two pairs of ranks, each pair on one GPU: each rank takes half of its GPU's EFAs.
  std::vector<NicChoice> pairs = node_choices(t, {0, 0, 1, 1});
  for (int r = 0; r < 4; ++r) {
    ASSERT_EQ(pairs[r].domains.size(), 2u) << pairs[r].why;
    for (const std::string& d : pairs[r].domains) EXPECT_TRUE(nearest_to(t, r / 2, d)) << d;
  }
  EXPECT_EQ(distinct_domains(pairs).size(), 8u);
  // Ranks 0-3 chose GPUs 4-7; ranks 4-7 had no context and land on GPUs 4-7 by local rank.
  std::vector<NicChoice> half = node_choices(t, {4, 5, 6, 7, -1, -1, -1, -1});
  for (int r = 0; r < 8; ++r) {
    ASSERT_EQ(half[r].domains.size(), 2u) << half[r].why;
    for (const std::string& d : half[r].domains) EXPECT_TRUE(nearest_to(t, 4 + r % 4, d)) << d;
  }
  EXPECT_EQ(distinct_domains(half).size(), 16u) << "the ranks on a GPU divide its EFAs";
  EXPECT_NE(half[0].why.find("from this rank's CUDA context"), std::string::npos);
  EXPECT_NE(half[4].why.find("no CUDA context"), std::string::npos);
}

TEST(RankGpuChoice, EdgeCases) {
  // A rank alone on its node keeps its context's GPU, even on a many-GPU node.
  EXPECT_EQ(choose_rank_gpu({5}, 0, 8).gpu, 5);
  // A context the topology cannot place (index out of range) counts as none.
  EXPECT_EQ(choose_rank_gpu({9, 1}, 0, 8).gpu, 0);
  // Without GPUs in sysfs there is nothing to choose.
  EXPECT_EQ(choose_rank_gpu({-1, -1}, 1, 0).gpu, -1);
  // Local ranks beyond the GPU count wrap around.
  EXPECT_EQ(choose_rank_gpu(std::vector<int>(10, 0), 9, 8).gpu, 1);
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

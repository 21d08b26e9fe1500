// The provider policy and the host-MPI steering are pure functions: every case here.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <fstream>

#include "policy/efa_presence.h"
#include "policy/gdr_policy.h"
#include "policy/host_mpi_steering.h"
#include "policy/provider_policy.h"
#include "transport/fabric/hmem_opt_out.h"

namespace efacoll {
namespace {

TEST(ProviderPolicy, EfaFoundIsSilent) {
  auto d = decide_provider("efa", true, {"efa", "tcp;ofi_rxm"}, "");
  EXPECT_TRUE(d.ok);
  EXPECT_TRUE(d.warning.empty());
}

TEST(ProviderPolicy, NoEfaFailsAndSaysWhatWasOfferedAndHowToChoose) {
  auto d = decide_provider("efa", false, {"tcp;ofi_rxm", "shm", "udp;ofi_rxd"}, "");
  EXPECT_FALSE(d.ok);
  EXPECT_NE(d.error.find("EFA provider is not available"), std::string::npos);
  EXPECT_NE(d.error.find("tcp;ofi_rxm, shm, udp;ofi_rxd"), std::string::npos);
  EXPECT_NE(d.error.find("EFACOLL_PROVIDER=tcp"), std::string::npos);
  EXPECT_NE(d.error.find("never falls back"), std::string::npos);
}

TEST(ProviderPolicy, FiProviderFilterIsNamed) {
  auto d = decide_provider("efa", false, {"tcp;ofi_rxm"}, "tcp");
  EXPECT_NE(d.error.find("FI_PROVIDER=tcp"), std::string::npos);
}

TEST(ProviderPolicy, ChosenTcpWarnsItIsNotEfa) {
  auto d = decide_provider("tcp", true, {"tcp;ofi_rxm"}, "");
  EXPECT_TRUE(d.ok);
  EXPECT_NE(d.warning.find("NOT EFA"), std::string::npos);
}

TEST(ProviderPolicy, MissingChosenProviderFails) {
  auto d = decide_provider("verbs", false, {}, "");
  EXPECT_FALSE(d.ok);
  EXPECT_NE(d.error.find("EFACOLL_PROVIDER=verbs"), std::string::npos);
  EXPECT_NE(d.error.find("offered: none"), std::string::npos);
}

TEST(MpiFlavor, FromLibraryVersionText) {
  EXPECT_EQ(detect_mpi_flavor("Open MPI v4.1.6, package: Debian"), MpiFlavor::kOpenMpi);
  EXPECT_EQ(detect_mpi_flavor("Intel(R) MPI Library 2021.10 for Linux* OS"), MpiFlavor::kIntelMpi);
  EXPECT_EQ(detect_mpi_flavor("MPICH Version: 4.1.2"), MpiFlavor::kMpich);
  EXPECT_EQ(detect_mpi_flavor("MVAPICH2 Version 2.3.7 (based on MPICH)"), MpiFlavor::kMvapich);
  EXPECT_EQ(detect_mpi_flavor("Something else"), MpiFlavor::kUnknown);
}

using Settings = std::vector<std::pair<std::string, std::string>>;

TEST(HostMpiSteering, OpenMpiOnEfa) {
  auto plan = plan_host_mpi_steering(MpiFlavor::kOpenMpi, true, {});
  EXPECT_EQ(plan.set, (Settings{{"OMPI_MCA_mtl_ofi_provider_include", "efa"}}));
  ASSERT_EQ(plan.messages.size(), 1u);
}

TEST(HostMpiSteering, IntelMpiUsesTheSystemLibfabric) {
  auto plan = plan_host_mpi_steering(MpiFlavor::kIntelMpi, true, {});
  EXPECT_EQ(plan.set,
            (Settings{{"I_MPI_OFI_LIBRARY_INTERNAL", "0"}, {"I_MPI_OFI_PROVIDER", "efa"}}));
}

TEST(HostMpiSteering, MpichMvapichAndUnknownSetFiProvider) {
  for (MpiFlavor f : {MpiFlavor::kMpich, MpiFlavor::kMvapich, MpiFlavor::kUnknown}) {
    auto plan = plan_host_mpi_steering(f, true, {});
    EXPECT_EQ(plan.set, (Settings{{"FI_PROVIDER", "efa"}}));
  }
}

TEST(HostMpiSteering, NeverOverridesTheUser) {
  auto plan = plan_host_mpi_steering(MpiFlavor::kIntelMpi, true, {{"I_MPI_OFI_PROVIDER", "tcp"}});
  EXPECT_EQ(plan.set, (Settings{{"I_MPI_OFI_LIBRARY_INTERNAL", "0"}}));
  bool said = false;
  for (auto& m : plan.messages)
    said |= m.find("I_MPI_OFI_PROVIDER=tcp set by the user") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(HostMpiSteering, NothingWithoutEfa) {
  for (MpiFlavor f : {MpiFlavor::kOpenMpi, MpiFlavor::kIntelMpi, MpiFlavor::kMpich}) {
    auto plan = plan_host_mpi_steering(f, false, {});
    EXPECT_TRUE(plan.set.empty());
    EXPECT_EQ(plan.messages.size(), 1u);
  }
}

TEST(EfaPresence, FindsAmazonDevicesInAFixtureTree) {
  char tmpl[] = "/tmp/efacoll-sysfs-XXXXXX";
  std::string root = mkdtemp(tmpl);
  auto add = [&](const std::string& dev, const std::string& vendor) {
    std::string dir = root + "/class/infiniband/" + dev + "/device";
    std::string cmd = "mkdir -p " + dir;
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    std::ofstream(dir + "/vendor") << vendor << "\n";
  };
  EXPECT_TRUE(efa_devices(root).empty());
  add("mlx5_0", "0x15b3");
  EXPECT_TRUE(efa_devices(root).empty());
  add("rdmap16s27", "0x1d0f");
  EXPECT_EQ(efa_devices(root), std::vector<std::string>{"rdmap16s27"});
  std::system(("rm -rf " + root).c_str());
}

}  // namespace
}  // namespace efacoll

namespace efacoll {
namespace {

TEST(GdrPolicy, InstanceFamiliesThatHaveGpuDirect) {
  for (const char* t :
       {"p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge"}) {
    EXPECT_TRUE(instance_expects_gdr(t)) << t;
  }
  for (const char* t : {"p3dn.24xlarge", "g5.48xlarge", "p5.4xlarge", "c5n.18xlarge", ""}) {
    EXPECT_FALSE(instance_expects_gdr(t)) << t;
  }
}

TEST(GdrPolicy, WithFiHmemNothingToSay) {
  GdrDecision d = decide_gdr("efa", true, true, "p5.48xlarge", true);
  EXPECT_TRUE(d.ok);
  EXPECT_TRUE(d.warning.empty());
}

TEST(GdrPolicy, MissingGpuDirectOnP5WarnsThatDataIsStaged) {
  GdrDecision d = decide_gdr("efa", false, true, "p5.48xlarge", false);
  EXPECT_TRUE(d.ok);
  EXPECT_NE(d.warning.find("staged through host memory"), std::string::npos);
  EXPECT_NE(d.warning.find("EFACOLL_REQUIRE_GDR=1"), std::string::npos);
}

TEST(GdrPolicy, RequireGdrFailsWithoutFiHmem) {
  for (const char* provider : {"efa", "tcp"}) {
    GdrDecision d = decide_gdr(provider, false, true, "p4d.24xlarge", true);
    EXPECT_FALSE(d.ok);
    EXPECT_NE(d.error.find("no FI_HMEM"), std::string::npos);
  }
}

TEST(GdrPolicy, NoWarningWhereGpuDirectIsNotExpected) {
  EXPECT_TRUE(decide_gdr("tcp", false, true, "p5.48xlarge", false).warning.empty());
  EXPECT_TRUE(decide_gdr("efa", false, true, "g5.48xlarge", false).warning.empty());
  EXPECT_TRUE(decide_gdr("efa", false, false, "p5.48xlarge", false).warning.empty());
}

TEST(GdrPolicy, ProviderThatCannotDropCudaCallsLosesFiHmemAndSaysWhy) {
  // fi_setopt(FI_OPT_CUDA_API_PERMITTED, false) on an FI_HMEM endpoint, as efa answers it.
  const HmemOptOut no_p2p = judge_cuda_api_opt_out(-EOPNOTSUPP);
  EXPECT_FALSE(no_p2p.keep_hmem);
  EXPECT_NE(no_p2p.note.find("no peer-to-peer"), std::string::npos);
  const HmemOptOut no_cuda = judge_cuda_api_opt_out(-EINVAL);
  EXPECT_FALSE(no_cuda.keep_hmem);
  EXPECT_NE(no_cuda.note.find("no CUDA library or device"), std::string::npos);
  // The warning on a p5 then says why instead of "has no FI_HMEM", and the requirement fails.
  GdrDecision d = decide_gdr("efa", no_p2p.keep_hmem, true, "p5.48xlarge", false, no_p2p.note);
  EXPECT_TRUE(d.ok);
  EXPECT_EQ(d.warning.find("has no FI_HMEM"), std::string::npos) << d.warning;
  EXPECT_NE(d.warning.find("provider efa offers FI_HMEM but cannot reach GPU memory"),
            std::string::npos)
      << d.warning;
  EXPECT_EQ(d.warning.find("libfabric with CUDA support"), std::string::npos) << d.warning;
  d = decide_gdr("efa", no_p2p.keep_hmem, true, "p5.48xlarge", true, no_p2p.note);
  EXPECT_FALSE(d.ok);
  EXPECT_NE(d.error.find("EFACOLL_REQUIRE_GDR=1 but provider efa offers FI_HMEM"),
            std::string::npos)
      << d.error;
}

TEST(GdrPolicy, CudaCallsDroppedConfirmGpuDirectAndOldLibfabricKeepsFiHmem) {
  const HmemOptOut ok = judge_cuda_api_opt_out(0);
  EXPECT_TRUE(ok.keep_hmem);
  EXPECT_NE(ok.note.find("GPUDirect RDMA"), std::string::npos);
  // libfabric < 1.18 knows no such option; its efa offers FI_HMEM only with GPUDirect.
  const HmemOptOut old = judge_cuda_api_opt_out(-ENOPROTOOPT);
  EXPECT_TRUE(old.keep_hmem);
  EXPECT_TRUE(old.note.empty());
}

}  // namespace
}  // namespace efacoll

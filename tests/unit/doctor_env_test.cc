// efacoll-doctor: interface settings, huge pages and fork, efacoll's parameters, launchers.
#include <gtest/gtest.h>

#include "doctor/doctor_gather.h"
#include "doctor/doctor_ifname.h"
#include "doctor_fixture.h"

namespace efacoll {
namespace testing {
namespace {

using doctor::Verdict;

using Names = std::vector<std::string>;
const Names kInterfaces = {"docker0", "ens5", "ens6", "eth0", "lo"};

TEST(DoctorIfname, NcclPrefixesExactNamesAndExclusion) {
  doctor::IfaceMatch m = doctor::match_nccl_ifname("ens", kInterfaces);
  EXPECT_EQ(m.selected, (Names{"ens5", "ens6"}));
  EXPECT_TRUE(m.unmatched.empty());
  m = doctor::match_nccl_ifname("=ens", kInterfaces);
  EXPECT_TRUE(m.selected.empty());
  EXPECT_EQ(m.unmatched, Names{"ens"});
  m = doctor::match_nccl_ifname("=ens5,ib", kInterfaces);
  EXPECT_EQ(m.selected, Names{"ens5"});
  EXPECT_EQ(m.unmatched, Names{"ib"});
  m = doctor::match_nccl_ifname("^docker,lo", kInterfaces);
  EXPECT_TRUE(m.exclude);
  EXPECT_EQ(m.selected, (Names{"ens5", "ens6", "eth0"}));
  m = doctor::match_nccl_ifname("^=ens", kInterfaces);
  EXPECT_EQ(m.selected, kInterfaces) << "an exact name that matches nothing excludes nothing";
}

TEST(DoctorIfname, NameListsSkipSubnets) {
  doctor::IfaceMatch m = doctor::match_names("eth0,10.0.0.0/16,eth9", kInterfaces);
  EXPECT_EQ(m.selected, Names{"eth0"});
  EXPECT_EQ(m.unmatched, Names{"eth9"});
  EXPECT_EQ(doctor::match_names("10.0.0.0/16", kInterfaces).selected, kInterfaces);
  EXPECT_EQ(doctor::match_names("all", kInterfaces).selected, kInterfaces);
}

doctor::Check iface(DoctorMachine& m, const std::string& var, const std::string& value) {
  m.obs.env = {{var, value}};
  return find_check(m.run(), "iface");
}

TEST(DoctorEnv, InterfaceSettingsAgainstTheNode) {
  DoctorMachine m(Layout::kBare);  // interfaces eth0 and lo
  EXPECT_TRUE(
      is_check(iface(m, "NCCL_SOCKET_IFNAME", "ens5"), Verdict::kFail,
               "NCCL_SOCKET_IFNAME=ens5: no such interface here (eth0, lo); NCCL finds none",
               "set NCCL_SOCKET_IFNAME to one of: eth0, lo; or unset it"));
  EXPECT_TRUE(is_check(iface(m, "NCCL_SOCKET_IFNAME", "eth,ens"), Verdict::kWarn,
                       "ens match no interface here; NCCL uses eth0"));
  EXPECT_TRUE(is_check(iface(m, "NCCL_SOCKET_IFNAME", "eth"), Verdict::kOk));
  EXPECT_TRUE(is_check(iface(m, "NCCL_SOCKET_IFNAME", "^docker"), Verdict::kOk));
  EXPECT_TRUE(is_check(iface(m, "NCCL_SOCKET_IFNAME", "^eth"), Verdict::kWarn, "leaves lo"));
  EXPECT_TRUE(is_check(iface(m, "OMPI_MCA_btl_tcp_if_include", "eth0,10.0.0.0/8"), Verdict::kOk));
  EXPECT_TRUE(is_check(iface(m, "OMPI_MCA_oob_tcp_if_include", "ens5"), Verdict::kFail));
  EXPECT_TRUE(is_check(iface(m, "FI_TCP_IFACE", "eth1"), Verdict::kFail));
  EXPECT_TRUE(is_check(iface(m, "I_MPI_HYDRA_IFACE", "eth0"), Verdict::kOk));
  m.obs.env.clear();
  EXPECT_TRUE(has_verdict(m.run(), "iface", Verdict::kInfo, "interfaces here: eth0, lo"));
}

TEST(DoctorEnv, UcxAndEfaDeviceNames) {
  DoctorMachine m(Layout::kP4d);
  EXPECT_TRUE(is_check(iface(m, "UCX_NET_DEVICES", "mlx5_0:1"), Verdict::kFail));
  EXPECT_TRUE(is_check(iface(m, "UCX_NET_DEVICES", "rdmap16s27:1,eth0"), Verdict::kOk));
  EXPECT_TRUE(is_check(iface(m, "FI_EFA_IFACE", "rdmap16s27,rdmap32s27"), Verdict::kOk));
  EXPECT_TRUE(is_check(iface(m, "FI_EFA_IFACE", "rdmap79s0"), Verdict::kFail));
}

struct HazardCase {
  const char* check;
  const char* kernel;
  EnvMap env;
  Verdict verdict;
  const char* in_finding;
  const char* in_fix;
};

const char kNew[] = "6.1.0-13-cloud-amd64";
const char kOld[] = "5.10.0-26-cloud-amd64";

// With EFA: huge pages and fork(), rdma-core's fork protection.
const HazardCase kHazards[] = {
    // Nothing set: efacoll sets both itself (policy/fork_safety).
    {"hugepages", kNew, {}, Verdict::kOk, "efacoll sets FI_EFA_FORK_SAFE=1", ""},
    {"hugepages",
     kNew,
     {{"TORCHELASTIC_RUN_ID", "job7"}},
     Verdict::kOk,
     "efacoll sets FI_EFA_FORK_SAFE=1",
     ""},
    // The user's own fork setting stands, and huge pages stay on.
    {"hugepages",
     kNew,
     {{"RDMAV_FORK_SAFE", "1"}},
     Verdict::kInfo,
     "FI_EFA_USE_HUGE_PAGE unset (on)",
     "FI_EFA_USE_HUGE_PAGE=0"},
    {"hugepages",
     kNew,
     {{"TORCHELASTIC_RUN_ID", "job7"}, {"RDMAV_FORK_SAFE", "1"}},
     Verdict::kWarn,
     "TORCHELASTIC_RUN_ID is set",
     "DataLoader"},
    {"hugepages",
     kNew,
     {{"TORCHELASTIC_RUN_ID", "job7"}, {"FI_EFA_USE_HUGE_PAGE", "0"}},
     Verdict::kOk,
     "",
     ""},
    {"hugepages",
     kNew,
     {{"FI_EFA_USE_HUGE_PAGE", "1"}, {"FI_EFA_FORK_SAFE", "1"}},
     Verdict::kFail,
     "aborts",
     "unset FI_EFA_USE_HUGE_PAGE"},
    {"fork", kNew, {}, Verdict::kOk, ">= 5.13", ""},
    {"fork",
     kNew,
     {{"FI_EFA_FORK_SAFE", "1"}},
     Verdict::kInfo,
     "not needed",
     "unset FI_EFA_FORK_SAFE"},
    {"fork", kOld, {{"FI_EFA_FORK_SAFE", "1"}}, Verdict::kOk, "(< 5.13)", ""},
    {"fork", kOld, {}, Verdict::kWarn, "(< 5.13)", "FI_EFA_FORK_SAFE=1"},
    {"fork", kNew, {{"RDMAV_FORK_SAFE", "1"}}, Verdict::kWarn, "", "unset RDMAV_FORK_SAFE"},
};

TEST(DoctorEnv, HugePagesAndFork) {
  DoctorMachine m(Layout::kP5);
  for (const HazardCase& c : kHazards) {
    m.obs.kernel = c.kernel;
    m.obs.env = c.env;
    EXPECT_TRUE(has_verdict(m.run(), c.check, c.verdict, c.in_finding, c.in_fix));
  }
}

TEST(DoctorEnv, EfacollParameters) {
  DoctorMachine m(Layout::kBare);
  m.obs.env = {{"EFACOLL_CHUNKSIZE", "1M"}};
  EXPECT_TRUE(has_verdict(m.run(), "params", Verdict::kWarn, "unknown variable EFACOLL_CHUNKSIZE"));
  m.obs.env = {{"EFACOLL_DEBUG", "INFO"}};
  EXPECT_EQ(find_check(m.run(), "params").finding, "EFACOLL_DEBUG=INFO");
}

TEST(DoctorEnv, LauncherLocalRank) {
  EXPECT_EQ(doctor::launcher_local_rank({}), -1);
  EXPECT_EQ(doctor::launcher_local_rank({{"OMPI_COMM_WORLD_LOCAL_RANK", "3"}}), 3);
  EXPECT_EQ(doctor::launcher_local_rank({{"PMI_RANK", "5"}, {"MPI_LOCALRANKID", "1"}}), 1);
  EXPECT_EQ(doctor::launcher_local_rank({{"SLURM_LOCALID", "0"}}), 0);
  EXPECT_EQ(doctor::launcher_local_rank({{"PMI_RANK", "2"}}), 2);
}

}  // namespace
}  // namespace testing
}  // namespace efacoll

// efacoll-doctor: the MPI library and whether its own traffic takes EFA or TCP.
#include <gtest/gtest.h>

#include "doctor_fixture.h"

namespace efacoll {
namespace testing {
namespace {

using doctor::Verdict;

TEST(DoctorMpi, LibraryLineIsTheFirstLineAndTheFlavour) {
  DoctorMachine m(Layout::kBare);
  EXPECT_EQ(find_check(m.run(), "mpi").finding,
            "Open MPI v4.1.6, package: Open MPI Distribution, ident: 4.1.6, repo rev: v4.1.6, Sep "
            "30, 2023 (Open MPI)");
  m.obs.mpi_version = "";
  EXPECT_EQ(find_check(m.run(), "mpi").finding, "MPI library unknown");
}

TEST(DoctorMpi, WithoutEfaTheMpiKeepsItsTransports) {
  DoctorMachine m(Layout::kBare);
  m.obs.env = {{"OMPI_MCA_pml", "ob1"}};
  EXPECT_TRUE(
      has_verdict(m.run(), "mpi-net", Verdict::kInfo, "no EFA device: Open MPI uses its own"));
}

struct MpiCase {
  const char* version;
  EnvMap env;
  Verdict verdict;
  const char* in_finding;
  const char* in_fix;
};

// On an EFA host: the MPI's settings after efacoll's steering, never over the user's own.
const MpiCase kCases[] = {
    // Open MPI: ob1 over the TCP BTL, UCX, or an MTL other than OFI keep its traffic on TCP.
    {kOpenMpiVersion,
     {{"OMPI_MCA_pml", "ob1"}, {"OMPI_MCA_btl", "self,vader,tcp"}},
     Verdict::kWarn,
     "OMPI_MCA_pml=ob1 with btl self,vader,tcp: its own traffic goes over TCP",
     "OMPI_MCA_pml=cm OMPI_MCA_mtl=ofi"},
    {kOpenMpiVersion,
     {{"OMPI_MCA_pml", "ucx"}},
     Verdict::kWarn,
     "UCX has no EFA transport",
     "--mca pml cm --mca mtl ofi"},
    {kOpenMpiVersion,
     {{"OMPI_MCA_mtl", "psm2"}},
     Verdict::kWarn,
     "OMPI_MCA_mtl=psm2 is not the OFI MTL",
     "OMPI_MCA_mtl=ofi"},
    {kOpenMpiVersion,
     {{"OMPI_MCA_pml", "cm"}, {"OMPI_MCA_mtl", "ofi"}},
     Verdict::kOk,
     "EFA (preloaded, efacoll sets OMPI_MCA_mtl_ofi_provider_include=efa at MPI_Init)",
     ""},
    // Open MPI 5: ob1 over the OFI BTL reaches EFA too.
    {kOpenMpiVersion,
     {{"OMPI_MCA_pml", "ob1"}, {"OMPI_MCA_btl", "self,ofi"}},
     Verdict::kOk,
     "btl ofi: EFA",
     ""},
    {kOpenMpiVersion, {}, Verdict::kInfo, "OMPI_MCA_pml unset", "to be sure:"},
    {kOpenMpiVersion,
     {{"OMPI_MCA_mtl_ofi_provider_include", "tcp"}},
     Verdict::kWarn,
     "provider_include=tcp: the OFI MTL skips efa",
     "OMPI_MCA_mtl_ofi_provider_include=efa"},
    {kOpenMpiVersion,
     {{"EFACOLL_STEER_MPI", "0"}},
     Verdict::kInfo,
     "(EFACOLL_STEER_MPI=0 or EFACOLL_ENABLE=0: efacoll sets nothing)",
     ""},
    // Intel MPI: its bundled libfabric has no EFA; unset, efacoll steers it to the system one.
    {kIntelMpiVersion,
     {{"I_MPI_OFI_LIBRARY_INTERNAL", "1"}},
     Verdict::kWarn,
     "Intel MPI: I_MPI_OFI_LIBRARY_INTERNAL=1: Intel MPI's bundled libfabric has no EFA",
     "I_MPI_OFI_LIBRARY_INTERNAL=0 I_MPI_OFI_PROVIDER=efa"},
    {kIntelMpiVersion,
     {{"EFACOLL_STEER_MPI", "0"}},
     Verdict::kWarn,
     "I_MPI_OFI_LIBRARY_INTERNAL=unset (1)",
     "I_MPI_OFI_LIBRARY_INTERNAL=0"},
    {kIntelMpiVersion,
     {},
     Verdict::kOk,
     "efacoll sets I_MPI_OFI_LIBRARY_INTERNAL=0, I_MPI_OFI_PROVIDER=efa",
     ""},
    {kIntelMpiVersion,
     {{"I_MPI_OFI_PROVIDER", "tcp"}},
     Verdict::kWarn,
     "I_MPI_OFI_PROVIDER=tcp: its own traffic goes over TCP",
     "I_MPI_OFI_PROVIDER=efa"},
    // MPICH follows FI_PROVIDER, unless built on UCX.
    {kMpichVersion,
     {{"FI_PROVIDER", "tcp"}},
     Verdict::kWarn,
     "MPICH: FI_PROVIDER=tcp",
     "FI_PROVIDER=efa, or unset it"},
    {kMpichVersion, {}, Verdict::kOk, "efacoll sets FI_PROVIDER=efa", ""},
    {"MPICH Version: 4.1.2\nMPICH Device: ch4:ucx\n",
     {},
     Verdict::kWarn,
     "built with ch4:ucx",
     "--with-device=ch4:ofi"},
};

TEST(DoctorMpi, OwnTrafficOnEfaOrTcp) {
  DoctorMachine m(Layout::kP4d);
  for (const MpiCase& c : kCases) {
    m.obs.mpi_version = c.version;
    m.obs.env = c.env;
    EXPECT_TRUE(has_verdict(m.run(), "mpi-net", c.verdict, c.in_finding, c.in_fix)) << c.version;
  }
}

}  // namespace
}  // namespace testing
}  // namespace efacoll

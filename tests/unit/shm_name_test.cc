// shm endpoints are named by efacoll (transport/fabric/shm_name.h): a region left in /dev/shm by
// a killed process whose pid comes round again must not stop (or crash) a new endpoint.
#include "transport/fabric/shm_name.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "thread_ranks.h"
#include "transport/fabric/fabric_info.h"
#include "transport/fabric/fabric_transport.h"

namespace efacoll {
namespace {

TEST(ShmName, IsNewEveryTimeAndNamesThisProcess) {
  const std::string a = unique_shm_name(), b = unique_shm_name();
  EXPECT_NE(a, b);
  const std::string prefix = shm_name_prefix(getpid());
  EXPECT_EQ(a.rfind(prefix, 0), 0u) << a;
  EXPECT_EQ(a.size(), prefix.size() + 16) << a;
}

TEST(ShmName, EndpointsOpenWhereAnOldProcessOfThisPidLeftItsRegions) {
  if (!testing::provider_available("shm"))
    GTEST_SKIP() << "libfabric provider shm not available here";
  // The names libfabric 1.17's shm gives its regions: "<pid>:0:<endpoint>". Left empty, as by
  // a process killed while creating one: shm would map them and die of SIGBUS.
  std::vector<std::string> made;
  for (int ep = 0; ep < 64; ++ep) {
    const std::string path = "/dev/shm/" + std::to_string(getpid()) + ":0:" + std::to_string(ep);
    if (std::filesystem::exists(path)) continue;
    if (std::FILE* f = std::fopen(path.c_str(), "w")) {
      std::fclose(f);
      made.push_back(path);
    }
  }
  if (made.empty()) GTEST_SKIP() << "cannot write to /dev/shm here";
  std::unique_ptr<Transport> a, b;
  for (auto* t : {&a, &b}) {
    FiInfoPtr info;
    ASSERT_TRUE(find_provider("shm", &info).is_ok());
    const Status st = open_fabric_transport(info.get(), FabricOptions{}, t);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
  }
  if (a && b) {
    const std::vector<uint8_t> addr = a->local_address();
    const std::string name(addr.begin(), addr.end());
    EXPECT_EQ(name.rfind(shm_name_prefix(getpid()), 0), 0u) << name;
    EXPECT_NE(a->local_address(), b->local_address());
  }
  for (const std::string& p : made) std::filesystem::remove(p);
}

}  // namespace
}  // namespace efacoll

#include "common/params.h"

#include <gtest/gtest.h>

#include "common/log.h"

namespace efacoll {
namespace {

TEST(Params, DefaultsFromTheTable) {
  Params p = Params::from_env({});
  EXPECT_EQ(p.text(Param::kProvider), "efa");
  EXPECT_FALSE(p.flag(Param::kHostBuffers));
  EXPECT_EQ(p.integer(Param::kChunkSize), 524288);
  EXPECT_FALSE(p.is_set(Param::kProvider));
  EXPECT_TRUE(p.problems().empty());
}

TEST(Params, ParsesEachKind) {
  Params p = Params::from_env({{"EFACOLL_PROVIDER", "tcp"},
                               {"EFACOLL_HOST_BUFFERS", "yes"},
                               {"EFACOLL_CHUNK_SIZE", "4K"},
                               {"EFACOLL_TIMEOUT", "7"}});
  EXPECT_EQ(p.text(Param::kProvider), "tcp");
  EXPECT_TRUE(p.flag(Param::kHostBuffers));
  EXPECT_EQ(p.integer(Param::kChunkSize), 4096);
  EXPECT_EQ(p.integer(Param::kTimeout), 7);
  EXPECT_TRUE(p.is_set(Param::kTimeout));
}

TEST(Params, BadValueKeepsDefaultAndSaysSo) {
  Params p = Params::from_env({{"EFACOLL_CHUNK_SIZE", "lots"}});
  EXPECT_EQ(p.integer(Param::kChunkSize), 524288);
  ASSERT_EQ(p.problems().size(), 1u);
  EXPECT_NE(p.problems()[0].find("EFACOLL_CHUNK_SIZE"), std::string::npos);
}

TEST(Params, WarnsAboutUnknownEfacollVariablesOnly) {
  Params p = Params::from_env({{"EFACOLL_PROVDER", "tcp"}, {"NCCL_DEBUG", "INFO"}});
  ASSERT_EQ(p.problems().size(), 1u);
  EXPECT_NE(p.problems()[0].find("EFACOLL_PROVDER"), std::string::npos);
}

TEST(Params, ParseBytes) {
  int64_t v = 0;
  EXPECT_TRUE(parse_bytes("1M", &v));
  EXPECT_EQ(v, 1 << 20);
  EXPECT_TRUE(parse_bytes("2GB", &v));
  EXPECT_EQ(v, int64_t(2) << 30);
  EXPECT_FALSE(parse_bytes("-1", &v));
  EXPECT_FALSE(parse_bytes("1X", &v));
}

TEST(Params, MarkdownListsEveryParameter) {
  std::string md = params_markdown();
  for (int i = 0; i < static_cast<int>(Param::kCount); ++i) {
    EXPECT_NE(md.find(param_info(static_cast<Param>(i)).name), std::string::npos);
  }
}

TEST(LogConfig, LevelsAndSubsystems) {
  LogConfig c = parse_log_config("INFO", "INIT,NET", "");
  EXPECT_EQ(c.level, LogLevel::kInfo);
  EXPECT_EQ(c.subsys, unsigned(kInit | kNet));
  c = parse_log_config("TRACE", "^COLL", "");
  EXPECT_EQ(c.subsys & kColl, 0u);
  EXPECT_NE(c.subsys & kInit, 0u);
  EXPECT_EQ(parse_log_config("bogus", "", "").level, LogLevel::kWarn);
}

}  // namespace
}  // namespace efacoll

// efacoll-bench's command line: nccl-tests' spellings, optional report files, and usage errors
// that say what was wrong.
#include <gtest/gtest.h>

#include <vector>

#include "options.h"

namespace efacoll_bench {
namespace {

ParseResult parse(std::vector<const char*> args, Options* o, std::string* error) {
  args.insert(args.begin(), "efacoll-bench");
  return parse_options(static_cast<int>(args.size()), args.data(), o, error);
}

TEST(BenchOptions, ParseBytes) {
  EXPECT_EQ(parse_bytes("8"), 8u);
  EXPECT_EQ(parse_bytes("1K"), 1024u);
  EXPECT_EQ(parse_bytes("2m"), 2u << 20);
  EXPECT_EQ(parse_bytes("1G"), 1u << 30);
  EXPECT_EQ(parse_bytes("12X"), 0u);
  EXPECT_EQ(parse_bytes("K"), 0u);
  EXPECT_EQ(parse_bytes(""), 0u);
  EXPECT_EQ(parse_bytes("-5"), 0u);
  EXPECT_EQ(parse_bytes("99999999999G"), 0u);  // overflows
}

TEST(BenchOptions, DefaultsAreNcclTestsLike) {
  Options o;
  std::string error;
  ASSERT_EQ(parse({}, &o, &error), ParseResult::kRun);
  EXPECT_EQ(o.collective, Collective::kAllreduce);
  EXPECT_EQ(o.type, DataType::kFloat);
  EXPECT_EQ(o.op, ReduceOp::kSum);
  EXPECT_TRUE(o.check);
  EXPECT_EQ(o.iters, 0);
  EXPECT_FALSE(o.csv.wanted);
}

TEST(BenchOptions, EverySpelling) {
  Options o;
  std::string error;
  ASSERT_EQ(
      parse({"-b",        "1K",       "-e2M",     "-f",     "4",        "-c",
             "0",         "--op=max", "-d",       "int32",  "-C",       "reduce_scatter_block",
             "--inplace", "--mem",    "host",     "-n",     "7",        "-w",
             "0",         "-r",       "3",        "--json", "run.json", "--csv",
             "--plot",    "p.png",    "--no-nccl"},
            &o, &error),
      ParseResult::kRun)
      << error;
  EXPECT_EQ(o.min_bytes, 1024u);
  EXPECT_EQ(o.max_bytes, 2u << 20);
  EXPECT_EQ(o.factor, 4u);
  EXPECT_FALSE(o.check);
  EXPECT_EQ(o.op, ReduceOp::kMax);
  EXPECT_EQ(o.type, DataType::kInt32);
  EXPECT_EQ(o.collective, Collective::kReduceScatterBlock);
  EXPECT_TRUE(o.in_place);
  EXPECT_EQ(o.iters, 7);
  EXPECT_EQ(o.warmup, 0);
  EXPECT_EQ(o.repeats, 3);
  EXPECT_TRUE(o.json.wanted);
  EXPECT_EQ(o.json.file, "run.json");
  EXPECT_TRUE(o.csv.wanted);
  EXPECT_EQ(o.csv.file, "");  // the next word is an option: stdout
  EXPECT_EQ(o.plot_file, "p.png");
  EXPECT_FALSE(o.nccl);
  EXPECT_TRUE(o.host_mpi);
}

TEST(BenchOptions, DashIsStdout) {
  Options o;
  std::string error;
  ASSERT_EQ(parse({"--csv", "-"}, &o, &error), ParseResult::kRun);
  EXPECT_TRUE(o.csv.wanted);
  EXPECT_EQ(o.csv.file, "");
}

TEST(BenchOptions, Help) {
  Options o;
  std::string error;
  EXPECT_EQ(parse({"-b", "8", "-h"}, &o, &error), ParseResult::kHelp);
  EXPECT_NE(usage_text().find("--plot FILE.png"), std::string::npos);
}

TEST(BenchOptions, ErrorsSayWhat) {
  const std::vector<std::pair<std::vector<const char*>, std::string>> cases = {
      {{"--bogus"}, "unknown option --bogus"},
      {{"-b"}, "-b needs a value"},
      {{"-c", "2"}, "bad value for -c: 2"},
      {{"-f", "1"}, "bad value for -f: 1"},
      {{"--dtype", "half"}, "bad value for --dtype: half"},
      {{"--inplace=1"}, "--inplace takes no value"},
      {{"-b", "1M", "-e", "1K"}, "-b is larger than -e"},
      {{"-o", "band", "-d", "float"}, "--op band needs an integer --dtype"},
      {{"--csv", "--json"}, "--csv and --json cannot both go to stdout: give one of them a file"},
      {{"extra"}, "unexpected argument extra"},
  };
  for (const auto& c : cases) {
    Options o;
    std::string error;
    EXPECT_EQ(parse(c.first, &o, &error), ParseResult::kError) << c.second;
    EXPECT_EQ(error, c.second);
  }
}

TEST(BenchOptions, BitwiseOpsAreFineForAllgatherOfFloats) {
  Options o;
  std::string error;
  EXPECT_EQ(parse({"-C", "allgather", "-o", "bxor", "-d", "float"}, &o, &error), ParseResult::kRun);
}

}  // namespace
}  // namespace efacoll_bench

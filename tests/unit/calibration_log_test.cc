// What EFACOLL_DEBUG=INFO shows of a calibration: every measured point of every algorithm, whole
// (before 2026-12-04 the corrections went out as one line cut at 2,048 characters, in the
// middle of the allgathers' points).
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "common/log.h"
#include "thread_ranks.h"
#include "tune/algo.h"
#include "tune/calibration_points.h"

namespace efacoll {
namespace testing {
namespace {

// While it lives the log prints at INFO for TUNE, and standard error is captured (gtest's
// capture; text() ends it); after, the log is at its default again.
class TuneInfoCaptured {
 public:
  TuneInfoCaptured() {
    log_configure(parse_log_config("INFO", "TUNE", ""));
    ::testing::internal::CaptureStderr();
  }
  ~TuneInfoCaptured() {
    if (capturing_) ::testing::internal::GetCapturedStderr();
    log_configure(parse_log_config("WARN", "", ""));
  }
  TuneInfoCaptured(const TuneInfoCaptured&) = delete;
  TuneInfoCaptured& operator=(const TuneInfoCaptured&) = delete;
  std::string text() {
    capturing_ = false;
    return ::testing::internal::GetCapturedStderr();
  }

 private:
  bool capturing_ = true;
};

std::vector<std::string> lines_with(const std::string& text, const std::string& part) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.find(part) != std::string::npos) out.push_back(line);
  }
  return out;
}

TEST(Log, ALineLongerThanTheStackBufferArrivesWhole) {
  const std::string long_text(5000, 'x');
  TuneInfoCaptured log;
  EFACOLL_INFO(kTune, "begin %s end", long_text.c_str());
  const std::vector<std::string> lines = lines_with(log.text(), "begin ");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("begin " + long_text + " end"), std::string::npos)
      << lines[0].size() << " characters";
}

// Each rank logs one line per collective and algorithm with every calibration point's size in
// order, each with its correction.
TEST(Calibration, LogsEveryPointOfEveryAlgorithm) {
  constexpr int kRanks = 4;
  RankSetup setup;
  setup.config.calibrate = true;
  TuneInfoCaptured log;
  const auto failures = run_ranks(kRanks, setup, [](RankContext&) {});
  for (const auto& f : failures) ADD_FAILURE() << f;
  const std::string text = log.text();
  for (CollKind kind : {CollKind::kAllreduce, CollKind::kAllgather, CollKind::kReduceScatter}) {
    for (Algo algo : {Algo::kRing, Algo::kTree, Algo::kRecursive}) {
      const std::string head = std::string("measured/predicted, ") + coll_name(kind) + " " +
                               algo_name(algo, kind) + ": ";
      const std::vector<std::string> lines = lines_with(text, head);
      if (!algo_applies(algo, kind, false)) {
        EXPECT_TRUE(lines.empty()) << head;
        continue;
      }
      ASSERT_EQ(lines.size(), size_t(kRanks)) << head;
      std::string sizes;
      for (const CalibrationPoint& p : calibration_points(kind, kRanks))
        sizes += (sizes.empty() ? "" : ", ") + size_text(p.bytes) + " x";
      for (const std::string& line : lines) {
        // Each point: "<size> x<factor> (measured x<factor>)"; strip the factors.
        std::string seen, rest = line.substr(line.find(head) + head.size());
        for (size_t at = 0; at < rest.size();) {
          const size_t x = rest.find(" x", at), end = rest.find(')', x);
          ASSERT_NE(end, std::string::npos) << line;
          seen += (seen.empty() ? "" : ", ") + rest.substr(at, x - at) + " x";
          at = rest.find_first_not_of(", ", end + 1);
          if (at == std::string::npos) break;
        }
        EXPECT_EQ(seen, sizes) << line;
      }
    }
  }
}

}  // namespace
}  // namespace testing
}  // namespace efacoll

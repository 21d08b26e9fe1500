// efacoll-doctor's output: aligned text with fixes and a summary; JSON that parses.
#include "doctor/doctor_report.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstring>

#include "common/json_text.h"
#include "doctor_fixture.h"

namespace efacoll {
namespace {

using doctor::Verdict;

// A strict JSON reader that only says whether the text is one valid value (RFC 8259).
class JsonCheck {
 public:
  explicit JsonCheck(const std::string& text) : s_(text) {}
  bool valid() {
    bool ok = value();
    space();
    return ok && i_ == s_.size();
  }

 private:
  void space() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool eat(char c) {
    space();
    if (i_ < s_.size() && s_[i_] == c) return ++i_, true;
    return false;
  }
  bool string() {
    if (!eat('"')) return false;
    while (i_ < s_.size() && s_[i_] != '"') {
      const unsigned char c = s_[i_++];
      if (c < 0x20) return false;
      if (c != '\\') continue;
      if (i_ >= s_.size()) return false;
      const char e = s_[i_++];
      if (e == 'u') {
        for (int k = 0; k < 4; ++k, ++i_) {
          if (i_ >= s_.size() || !std::isxdigit(static_cast<unsigned char>(s_[i_]))) return false;
        }
      } else if (std::string("\"\\/bfnrt").find(e) == std::string::npos) {
        return false;
      }
    }
    return eat('"');
  }
  bool items(char close, bool keyed) {
    if (eat(close)) return true;
    do {
      if (keyed && !(string() && eat(':'))) return false;
      if (!value()) return false;
    } while (eat(','));
    return eat(close);
  }
  bool value() {
    space();
    if (i_ >= s_.size()) return false;
    const char c = s_[i_];
    if (c == '{') return ++i_, items('}', true);
    if (c == '[') return ++i_, items(']', false);
    if (c == '"') return string();
    if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) {
      while (i_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[i_])) ||
                                std::string("-+.eE").find(s_[i_]) != std::string::npos)) {
        ++i_;
      }
      return true;
    }
    for (const char* word : {"true", "false", "null"}) {
      if (s_.compare(i_, std::strlen(word), word) == 0) return i_ += std::strlen(word), true;
    }
    return false;
  }
  const std::string& s_;
  size_t i_ = 0;
};

const doctor::Checks kChecks = {
    {"efa", Verdict::kFail, "no EFA device", "run on an EFA-enabled instance"},
    {"libfabric", Verdict::kOk, "1.17, /usr/lib/libfabric.so.1", ""},
    {"gpus", Verdict::kInfo, "no GPU (no NVIDIA GPU on the PCI bus)", ""},
    {"iface", Verdict::kWarn, "NCCL_SOCKET_IFNAME=\"ens\\5\"\tlist\n", "unset it"},
};

TEST(DoctorReport, TextLinesAreAlignedWithFixesAndASummary) {
  const std::string text = doctor::render_text({"0.1.0", "node1"}, kChecks);
  EXPECT_EQ(text.substr(0, text.find('\n')), "efacoll-doctor 0.1.0 on node1");
  EXPECT_NE(text.find("\nFAIL  efa        no EFA device\n"
                      "                 fix: run on an EFA-enabled instance\n"
                      "OK    libfabric  1.17, /usr/lib/libfabric.so.1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("WARN  iface      NCCL_SOCKET_IFNAME=\"ens\\5\" list \n"), std::string::npos)
      << "control characters become spaces\n"
      << text;
  EXPECT_NE(text.find("summary: 1 FAIL, 1 WARN, 1 OK, 1 INFO: "), std::string::npos) << text;
  EXPECT_NE(text.find("(exit 1)\n"), std::string::npos) << text;
}

TEST(DoctorReport, UnderMpirunEveryLineCarriesTheHost) {
  const std::string text = doctor::render_text({"0.1.0", "node1"}, kChecks, "node1: ");
  size_t lines = 0;
  for (size_t at = 0; at < text.size(); at = text.find('\n', at) + 1, ++lines) {
    EXPECT_EQ(text.compare(at, 7, "node1: "), 0) << text.substr(at, text.find('\n', at) - at);
  }
  EXPECT_EQ(lines, 1 + kChecks.size() + 2 + 1);  // header, checks, two fixes, summary
}

TEST(DoctorReport, JsonParsesAndEscapes) {
  const std::string json = doctor::render_json({"0.1.0", "node \"1\""}, kChecks);
  EXPECT_TRUE(JsonCheck(json).valid()) << json;
  EXPECT_EQ(json.find('\n'), json.size() - 1) << "one line per report";
  EXPECT_NE(json.find(R"("host": "node \"1\"")"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("finding": "NCCL_SOCKET_IFNAME=\"ens\\5\"\tlist\n")"), std::string::npos)
      << json;
  EXPECT_NE(json.find(R"({"name": "efa", "status": "FAIL", "finding": "no EFA device", )"
                      R"("fix": "run on an EFA-enabled instance"})"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find(R"("summary": {"ok": 1, "info": 1, "warn": 1, "fail": 1, "exit_status": 1})"),
            std::string::npos)
      << json;
  EXPECT_EQ(json_quoted(std::string("a\x01z", 3)), "\"a\\u0001z\"");
  EXPECT_FALSE(JsonCheck("{\"a\": \"x\ny\"}").valid()) << "the checker itself rejects raw newlines";
}

TEST(DoctorReport, WholeMachineReportsParse) {
  for (testing::Layout layout : {testing::Layout::kBare, testing::Layout::kP4d}) {
    testing::DoctorMachine m(layout);
    m.obs.env = {{"NCCL_SOCKET_IFNAME", "^\"weird\""}};
    const doctor::Checks checks = m.run();
    const std::string json = doctor::render_json({"0.1.0", "node1"}, checks);
    EXPECT_TRUE(JsonCheck(json).valid()) << json;
    EXPECT_EQ(doctor::exit_status(checks), layout == testing::Layout::kBare ? 1 : 0)
        << testing::describe(checks);
  }
}

}  // namespace
}  // namespace efacoll

#include "common/log.h"

#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <sstream>

namespace efacoll {
namespace {

struct LogState {
  std::atomic<int> level{static_cast<int>(LogLevel::kWarn)};
  std::atomic<unsigned> subsys{kAllSubsys};
  std::atomic<int> rank{-1};
  std::mutex mutex;
  FILE* out = nullptr;  // nullptr: stderr
};

LogState& state() {
  static LogState* s = new LogState();  // never destroyed: logging works during exit
  return *s;
}

unsigned subsys_bit(const std::string& word) {
  static const struct {
    const char* name;
    unsigned bit;
  } kNames[] = {{"INIT", kInit}, {"NET", kNet},   {"COLL", kColl}, {"GPU", kGpu},
                {"TOPO", kTopo}, {"TUNE", kTune}, {"ENV", kEnv},   {"ALL", kAllSubsys}};
  for (const auto& n : kNames)
    if (word == n.name) return n.bit;
  return 0;
}

const char* subsys_name(unsigned subsys) {
  switch (subsys) {
    case kInit:
      return "INIT";
    case kNet:
      return "NET";
    case kColl:
      return "COLL";
    case kGpu:
      return "GPU";
    case kTopo:
      return "TOPO";
    case kTune:
      return "TUNE";
    case kEnv:
      return "ENV";
  }
  return "ALL";
}

const char* level_name(LogLevel l) {
  switch (l) {
    case LogLevel::kError:
      return "ERROR";
    case LogLevel::kWarn:
      return "WARN";
    case LogLevel::kInfo:
      return "INFO";
    case LogLevel::kTrace:
      return "TRACE";
    default:
      return "";
  }
}

}  // namespace

std::string expand_path_pattern(const std::string& pattern) {
  char host[256] = "unknown";
  gethostname(host, sizeof(host) - 1);
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      char c = pattern[++i];
      if (c == 'h') {
        out += host;
        continue;
      }
      if (c == 'p') {
        out += std::to_string(getpid());
        continue;
      }
      out += '%';
    }
    out += pattern[i];
  }
  return out;
}

LogConfig parse_log_config(const std::string& level, const std::string& subsys,
                           const std::string& file_pattern) {
  LogConfig c;
  if (level == "NONE")
    c.level = LogLevel::kNone;
  else if (level == "ERROR")
    c.level = LogLevel::kError;
  else if (level == "INFO")
    c.level = LogLevel::kInfo;
  else if (level == "TRACE")
    c.level = LogLevel::kTrace;
  else
    c.level = LogLevel::kWarn;
  std::string list = subsys;
  bool invert = !list.empty() && list[0] == '^';
  if (invert) list.erase(0, 1);
  unsigned mask = 0;
  std::stringstream ss(list);
  for (std::string word; std::getline(ss, word, ',');) mask |= subsys_bit(word);
  c.subsys = invert ? (kAllSubsys & ~mask) : (mask ? mask : kAllSubsys);
  c.file_pattern = file_pattern;
  return c;
}

void log_configure(const LogConfig& config) {
  LogState& s = state();
  s.level = static_cast<int>(config.level);
  s.subsys = config.subsys;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!config.file_pattern.empty() && s.out == nullptr) {
    s.out = std::fopen(expand_path_pattern(config.file_pattern).c_str(), "a");
  }
}

void log_set_rank(int rank) { state().rank = rank; }

bool log_enabled(LogLevel level, unsigned subsys) {
  LogState& s = state();
  // Errors always print: they explain an abort.
  if (level == LogLevel::kError) return true;
  return static_cast<int>(level) <= s.level.load(std::memory_order_relaxed) &&
         (subsys & s.subsys.load(std::memory_order_relaxed)) != 0;
}

void log_write(LogLevel level, unsigned subsys, const char* fmt, ...) {
  LogState& s = state();
  static char host[64] = "";
  if (host[0] == '\0') {
    gethostname(host, sizeof(host) - 1);
    for (char* p = host; *p; ++p)
      if (*p == '.') {
        *p = '\0';
        break;
      }
  }
  // Most lines fit the stack; a longer one is printed whole from the heap (cut where that
  // fails: logging never throws).
  char small[2048];
  const char* msg = small;
  va_list ap, again;
  va_start(ap, fmt);
  va_copy(again, ap);
  const int n = vsnprintf(small, sizeof(small), fmt, ap);
  std::unique_ptr<char, decltype(&std::free)> large(nullptr, &std::free);
  if (n >= static_cast<int>(sizeof(small))) {
    large.reset(static_cast<char*>(std::malloc(static_cast<size_t>(n) + 1)));
    if (large) {
      vsnprintf(large.get(), static_cast<size_t>(n) + 1, fmt, again);
      msg = large.get();
    }
  }
  va_end(again);
  va_end(ap);
  std::lock_guard<std::mutex> lock(s.mutex);
  FILE* out = s.out ? s.out : stderr;
  std::fprintf(out, "%s:%d:%d efacoll %s %s %s\n", host, static_cast<int>(getpid()), s.rank.load(),
               level_name(level), subsys_name(subsys), msg);
  std::fflush(out);
}

}  // namespace efacoll

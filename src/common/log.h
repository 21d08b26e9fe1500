// NCCL_DEBUG-style logging: "host:pid:rank efacoll LEVEL SUBSYS message".
#pragma once
#include <string>

namespace efacoll {

enum class LogLevel { kNone = 0, kError = 1, kWarn = 2, kInfo = 3, kTrace = 4 };
enum LogSubsys : unsigned {
  kInit = 1u << 0,
  kNet = 1u << 1,
  kColl = 1u << 2,
  kGpu = 1u << 3,
  kTopo = 1u << 4,
  kTune = 1u << 5,
  kEnv = 1u << 6,
  kAllSubsys = 0x7fu
};

struct LogConfig {
  LogLevel level = LogLevel::kWarn;
  unsigned subsys = kAllSubsys;
  std::string file_pattern;  // empty: stderr
};

// Parses EFACOLL_DEBUG / EFACOLL_DEBUG_SUBSYS texts; unknown words are ignored.
LogConfig parse_log_config(const std::string& level, const std::string& subsys,
                           const std::string& file_pattern);
void log_configure(const LogConfig& config);
void log_set_rank(int rank);
// "%h" becomes the host name, "%p" the process id (for per-process file names).
std::string expand_path_pattern(const std::string& pattern);
bool log_enabled(LogLevel level, unsigned subsys);
void log_write(LogLevel level, unsigned subsys, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));

}  // namespace efacoll

#define EFACOLL_LOG(level, subsys, ...)                                                          \
  do {                                                                                           \
    if (::efacoll::log_enabled(level, subsys)) ::efacoll::log_write(level, subsys, __VA_ARGS__); \
  } while (0)
#define EFACOLL_WARN(subsys, ...) EFACOLL_LOG(::efacoll::LogLevel::kWarn, subsys, __VA_ARGS__)
#define EFACOLL_INFO(subsys, ...) EFACOLL_LOG(::efacoll::LogLevel::kInfo, subsys, __VA_ARGS__)
#define EFACOLL_TRACE(subsys, ...) EFACOLL_LOG(::efacoll::LogLevel::kTrace, subsys, __VA_ARGS__)
#define EFACOLL_ERROR(subsys, ...) EFACOLL_LOG(::efacoll::LogLevel::kError, subsys, __VA_ARGS__)

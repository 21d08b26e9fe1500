// Status: the one error currency inside efacoll. No exception crosses a layer boundary.
#pragma once
#include <string>
#include <utility>

namespace efacoll {

enum class Code {
  kOk = 0,
  kAgain,        // resource busy: retry after progress, never an error to report
  kInvalid,      // bad argument
  kUnsupported,  // not something the engine runs; callers may pass it to MPI
  kFabric,       // libfabric reported an error
  kTimeout,      // a peer did not answer before EFACOLL_TIMEOUT
  kTruncate,     // a message larger than its receive buffer arrived
  kMismatch,     // ranks made different calls (collective, type, op or count)
  kNoMemory,
  kCuda,
  kInternal,
};

const char* code_name(Code code);

class Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status ok() { return Status(); }

  bool is_ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string to_string() const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

#define EFACOLL_RETURN_IF_ERROR(expr) \
  do {                                \
    ::efacoll::Status s_ = (expr);    \
    if (!s_.is_ok()) return s_;       \
  } while (0)

}  // namespace efacoll

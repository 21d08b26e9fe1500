#include "efacoll/status.h"

namespace efacoll {

const char* code_name(Code code) {
  switch (code) {
    case Code::kOk:
      return "ok";
    case Code::kAgain:
      return "again";
    case Code::kInvalid:
      return "invalid argument";
    case Code::kUnsupported:
      return "unsupported";
    case Code::kFabric:
      return "fabric error";
    case Code::kTimeout:
      return "timeout";
    case Code::kTruncate:
      return "message truncated";
    case Code::kMismatch:
      return "mismatched call";
    case Code::kNoMemory:
      return "out of memory";
    case Code::kCuda:
      return "CUDA error";
    case Code::kInternal:
      return "internal error";
  }
  return "unknown";
}

std::string Status::to_string() const {
  if (is_ok()) return "ok";
  return std::string(code_name(code_)) + ": " + message_;
}

}  // namespace efacoll

// Engine failures become MPI errors raised through the communicator's error handler, with
// efacoll's message as the error string.
#include "common/log.h"
#include "mpi_shim/shim.h"

namespace efacoll {
namespace shim {
namespace {

struct ErrorCodes {
  int other = MPI_ERR_OTHER;
  int truncate = MPI_ERR_TRUNCATE;
  int arg = MPI_ERR_ARG;
  int no_mem = MPI_ERR_NO_MEM;
};

ErrorCodes& codes() {
  static ErrorCodes c;
  return c;
}

int add_code(int error_class) {
  int code = error_class;
  if (PMPI_Add_error_code(error_class, &code) != MPI_SUCCESS) return error_class;
  return code;
}

}  // namespace

void errors_init() {
  ErrorCodes& c = codes();
  c.other = add_code(MPI_ERR_OTHER);
  c.truncate = add_code(MPI_ERR_TRUNCATE);
  c.arg = add_code(MPI_ERR_ARG);
  c.no_mem = add_code(MPI_ERR_NO_MEM);
}

int raise_error(MPI_Comm comm, const Status& status, bool log) {
  ErrorCodes& c = codes();
  int code = c.other;
  switch (status.code()) {
    case Code::kTruncate:
      code = c.truncate;
      break;
    case Code::kInvalid:
      code = c.arg;
      break;
    case Code::kNoMemory:
      code = c.no_mem;
      break;
    default:
      break;
  }
  std::string text = "efacoll: " + status.to_string();
  if (log) EFACOLL_WARN(kColl, "%s", text.c_str());
  // MPI refuses longer strings (with an error of its own); the full text is in the log line.
  if (text.size() >= MPI_MAX_ERROR_STRING) text.resize(MPI_MAX_ERROR_STRING - 1);
  // Only codes we added may carry our text; predefined ones keep MPI's.
  if (code > MPI_ERR_LASTCODE) PMPI_Add_error_string(code, const_cast<char*>(text.c_str()));
  PMPI_Comm_call_errhandler(comm, code);
  return code;
}

}  // namespace shim
}  // namespace efacoll

// Engine failures and bad arguments become MPI errors raised through the communicator's error
// handler, with efacoll's message as the error string.
#include <cstring>
#include <exception>
#include <new>
#include <string>

#include "common/log.h"
#include "mpi_shim/shim.h"

namespace efacoll {
namespace shim {
namespace {

// One code of our own per class we raise: only codes we added may carry our text (predefined
// ones keep MPI's), and MPI_Error_class still gives the standard class.
struct ClassCode {
  int error_class;
  const char* name;
  int code;
};

ClassCode* class_codes(size_t* n) {
  static ClassCode table[] = {
      {MPI_ERR_OTHER, "MPI_ERR_OTHER", MPI_ERR_OTHER},
      {MPI_ERR_TRUNCATE, "MPI_ERR_TRUNCATE", MPI_ERR_TRUNCATE},
      {MPI_ERR_ARG, "MPI_ERR_ARG", MPI_ERR_ARG},
      {MPI_ERR_NO_MEM, "MPI_ERR_NO_MEM", MPI_ERR_NO_MEM},
      {MPI_ERR_COUNT, "MPI_ERR_COUNT", MPI_ERR_COUNT},
      {MPI_ERR_BUFFER, "MPI_ERR_BUFFER", MPI_ERR_BUFFER},
      {MPI_ERR_TYPE, "MPI_ERR_TYPE", MPI_ERR_TYPE},
      {MPI_ERR_OP, "MPI_ERR_OP", MPI_ERR_OP},
      {MPI_ERR_COMM, "MPI_ERR_COMM", MPI_ERR_COMM},
      {MPI_ERR_INTERN, "MPI_ERR_INTERN", MPI_ERR_INTERN},
      {MPI_ERR_REQUEST, "MPI_ERR_REQUEST", MPI_ERR_REQUEST},
  };
  *n = sizeof(table) / sizeof(table[0]);
  return table;
}

// The entry of `error_class`; MPI_ERR_OTHER's for a class not in the table.
const ClassCode& entry_of(int error_class) {
  size_t n = 0;
  const ClassCode* table = class_codes(&n);
  for (size_t i = 0; i < n; ++i) {
    if (table[i].error_class == error_class) return table[i];
  }
  return table[0];
}

// The string is shared by every error of the code: under MPI_THREAD_MULTIPLE, two threads
// failing at once may each read the other's text (the log line has each one's own).
int raise_code(MPI_Comm comm, int code, std::string text, bool log) {
  if (log) EFACOLL_WARN(kColl, "%s", text.c_str());
  // MPI refuses longer strings (with an error of its own); the full text is in the log line.
  if (text.size() >= MPI_MAX_ERROR_STRING) text.resize(MPI_MAX_ERROR_STRING - 1);
  if (code > MPI_ERR_LASTCODE) PMPI_Add_error_string(code, const_cast<char*>(text.c_str()));
  PMPI_Comm_call_errhandler(comm, code);
  return code;
}

// Whether a code MPI added takes our text. MPICH 4.0 hands out codes of predefined classes at or
// below MPI_ERR_LASTCODE whose string reads back as some other message of its own ("Invalid
// count, error stack: ... inet_pton"): there the class itself is raised, with MPI's text for
// it, and efacoll's text is in the log line only.
bool takes_our_text(int code) {
  if (code <= MPI_ERR_LASTCODE) return false;
  char probe[] = "efacoll: error string probe";
  char back[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  return PMPI_Add_error_string(code, probe) == MPI_SUCCESS &&
         PMPI_Error_string(code, back, &len) == MPI_SUCCESS && std::strcmp(back, probe) == 0;
}

}  // namespace

void errors_init() {
  size_t n = 0;
  ClassCode* table = class_codes(&n);
  for (size_t i = 0; i < n; ++i) {
    int code = table[i].error_class;
    if (PMPI_Add_error_code(table[i].error_class, &code) == MPI_SUCCESS && takes_our_text(code))
      table[i].code = code;
  }
}

int raise_error(MPI_Comm comm, const Status& status, bool log) {
  int error_class = MPI_ERR_OTHER;
  switch (status.code()) {
    case Code::kTruncate:
      error_class = MPI_ERR_TRUNCATE;
      break;
    case Code::kInvalid:
      error_class = MPI_ERR_ARG;
      break;
    case Code::kNoMemory:
      error_class = MPI_ERR_NO_MEM;
      break;
    default:
      break;
  }
  return raise_code(comm, entry_of(error_class).code, "efacoll: " + status.to_string(), log);
}

int raise_exception(MPI_Comm comm, const char* call) noexcept {
  int error_class = MPI_ERR_INTERN;
  const char* what = "an exception of unknown type";
  try {
    throw;
  } catch (const std::bad_alloc&) {
    error_class = MPI_ERR_NO_MEM;
    what = "out of memory (std::bad_alloc)";
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  try {
    std::string text = std::string("efacoll: ") + call + ": " + entry_of(error_class).name +
                       ": internal error: " + what;
    if (comm == MPI_COMM_NULL) {
      EFACOLL_WARN(kColl, "%s", text.c_str());
      return error_class;
    }
    return raise_code(comm, entry_of(error_class).code, std::move(text), true);
  } catch (...) {
    return error_class;  // no memory left even for the message
  }
}

int raise_arg_error(MPI_Comm comm, const char* call, const ArgError& error) {
  const ClassCode& e = entry_of(error.error_class);
  // A handle that is no communicator has no handler to call: Open MPI 4.1 raises such errors
  // on MPI_COMM_WORLD, and so do we.
  if (error.error_class == MPI_ERR_COMM) comm = MPI_COMM_WORLD;
  return raise_code(comm, e.code,
                    std::string("efacoll: ") + call + ": " + e.name + ": " + error.message, true);
}

}  // namespace shim
}  // namespace efacoll

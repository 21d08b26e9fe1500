#include "options.h"

#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

namespace efacoll_bench {
namespace {

enum class Arg { kNone, kRequired, kOptionalFile };

// One command-line option: how it is spelled, what it takes, what it does, what usage says.
struct Spec {
  char short_name;  // 0: long form only
  const char* long_name;
  Arg arg;
  const char* meta;
  const char* help;
  bool (*apply)(const char* value, Options* o);
};

bool parse_int(const char* text, int min, int* out) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || errno != 0 || v < min || v > INT_MAX) return false;
  *out = static_cast<int>(v);
  return true;
}

bool set_report(const char* value, ReportTarget* target) {
  target->wanted = true;
  target->file = value && std::strcmp(value, "-") != 0 ? value : "";
  return true;
}

const Spec kSpecs[] = {
    {'b', "minbytes", Arg::kRequired, "BYTES", "smallest size, K/M/G suffixes (default 8)",
     [](const char* v, Options* o) { return (o->min_bytes = parse_bytes(v)) > 0; }},
    {'e', "maxbytes", Arg::kRequired, "BYTES", "largest size (default 256M)",
     [](const char* v, Options* o) { return (o->max_bytes = parse_bytes(v)) > 0; }},
    {'f', "stepfactor", Arg::kRequired, "N", "size multiplication factor (default 2)",
     [](const char* v, Options* o) {
       int f = 0;
       return parse_int(v, 2, &f) && (o->factor = static_cast<size_t>(f), true);
     }},
    {'c', "check", Arg::kRequired, "0|1", "check every result element (default 1)",
     [](const char* v, Options* o) {
       int c = 0;
       return parse_int(v, 0, &c) && c <= 1 && (o->check = c == 1, true);
     }},
    {'n', "iters", Arg::kRequired, "N", "timed calls per repeat (default adaptive, ~0.2 s a size)",
     [](const char* v, Options* o) { return parse_int(v, 1, &o->iters); }},
    {'w', "warmup_iters", Arg::kRequired, "N", "untimed calls per size first (default 3)",
     [](const char* v, Options* o) { return parse_int(v, 0, &o->warmup); }},
    {'r', "repeats", Arg::kRequired, "N", "repeats; time is their median (default 5)",
     [](const char* v, Options* o) { return parse_int(v, 1, &o->repeats); }},
    {'C', "collective", Arg::kRequired, "NAME",
     "allreduce|allgather|reduce_scatter|reduce_scatter_block (default allreduce)",
     [](const char* v, Options* o) { return parse_collective(v, &o->collective); }},
    {'o', "op", Arg::kRequired, "OP", "sum|prod|max|min, band|bor|bxor for integers (default sum)",
     [](const char* v, Options* o) { return parse_op(v, &o->op); }},
    {'d', "dtype", Arg::kRequired, "TYPE",
     "int8|uint8|int32|uint32|int64|uint64|float|double (default float)",
     [](const char* v, Options* o) { return parse_type(v, &o->type); }},
    {0, "inplace", Arg::kNone, nullptr, "in-place calls (MPI_IN_PLACE; NCCL's in-place layout)",
     [](const char*, Options* o) {
       o->in_place = true;
       return true;
     }},
    {0, "mem", Arg::kRequired, "host|device", "where the buffers live (default host)",
     [](const char* v, Options* o) { return parse_memory(v, &o->memory); }},
    {0, "csv", Arg::kOptionalFile, "[FILE]",
     "also write CSV to FILE (stdout: instead of the table)",
     [](const char* v, Options* o) { return set_report(v, &o->csv); }},
    {0, "json", Arg::kOptionalFile, "[FILE]",
     "also write JSON to FILE (stdout: instead of the table)",
     [](const char* v, Options* o) { return set_report(v, &o->json); }},
    {0, "plot", Arg::kRequired, "FILE.png", "draw busbw against size with gnuplot",
     [](const char* v, Options* o) { return *v != '\0' && (o->plot_file = v, true); }},
    {0, "no-nccl", Arg::kNone, nullptr, "no NCCL column",
     [](const char*, Options* o) {
       o->nccl = false;
       return true;
     }},
    {0, "no-host-mpi", Arg::kNone, nullptr, "no host MPI (PMPI) column",
     [](const char*, Options* o) {
       o->host_mpi = false;
       return true;
     }},
    {'h', "help", Arg::kNone, nullptr, "this text", nullptr},
};

const Spec* find_spec(const char* arg, std::string* name, const char** inline_value) {
  *inline_value = nullptr;
  if (arg[0] != '-' || arg[1] == '\0') return nullptr;
  if (arg[1] == '-') {
    const char* eq = std::strchr(arg, '=');
    name->assign(arg, eq ? static_cast<size_t>(eq - arg) : std::strlen(arg));
    if (eq) *inline_value = eq + 1;
    for (const Spec& s : kSpecs) {
      if (name->compare(2, std::string::npos, s.long_name) == 0) return &s;
    }
    return nullptr;
  }
  name->assign(arg, 2);
  if (arg[2] != '\0') *inline_value = arg + 2;
  for (const Spec& s : kSpecs) {
    if (s.short_name == arg[1]) return &s;
  }
  return nullptr;
}

// What no single option can see: combinations.
bool check_combination(const Options& o, std::string* error) {
  if (o.min_bytes > o.max_bytes) {
    *error = "-b is larger than -e";
  } else if (is_bitwise(o.op) && is_floating(o.type) && reduces(o.collective)) {
    *error = std::string("--op ") + op_name(o.op) + " needs an integer --dtype";
  } else if (o.csv.wanted && o.json.wanted && o.csv.file.empty() && o.json.file.empty()) {
    *error = "--csv and --json cannot both go to stdout: give one of them a file";
  } else {
    return true;
  }
  return false;
}

}  // namespace

size_t parse_bytes(const char* text) {
  static const char kSuffixes[] = "KMG";
  if (!std::isdigit(static_cast<unsigned char>(text[0]))) return 0;
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(text, &end, 10);
  if (errno != 0) return 0;
  const char* suffix =
      *end ? std::strchr(kSuffixes, std::toupper(static_cast<unsigned char>(*end))) : nullptr;
  if (suffix && *suffix) {
    const int shift = 10 * static_cast<int>(suffix - kSuffixes + 1);
    if (v > (~0ull >> shift)) return 0;
    v <<= shift;
    ++end;
  }
  return *end == '\0' ? static_cast<size_t>(v) : 0;
}

ParseResult parse_options(int argc, const char* const* argv, Options* out, std::string* error) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string name;
    const char* value = nullptr;
    const Spec* spec = find_spec(argv[i], &name, &value);
    if (spec == nullptr) {
      *error = argv[i][0] == '-' ? "unknown option " + name
                                 : std::string("unexpected argument ") + argv[i];
      return ParseResult::kError;
    }
    if (spec->apply == nullptr) return ParseResult::kHelp;
    if (spec->arg == Arg::kNone && value) {
      *error = name + " takes no value";
      return ParseResult::kError;
    }
    if (spec->arg == Arg::kRequired && !value) {
      if (i + 1 == argc) {
        *error = name + " needs a value";
        return ParseResult::kError;
      }
      value = argv[++i];
    }
    // The file is optional, and nothing else here is positional: a next word that is not an
    // option is the file ("-" is stdout).
    if (spec->arg == Arg::kOptionalFile && !value && i + 1 < argc &&
        (argv[i + 1][0] != '-' || std::strcmp(argv[i + 1], "-") == 0)) {
      value = argv[++i];
    }
    if (!spec->apply(value, &o)) {
      *error = "bad value for " + name + ": " + (value ? value : "");
      return ParseResult::kError;
    }
  }
  if (!check_combination(o, error)) return ParseResult::kError;
  *out = o;
  return ParseResult::kRun;
}

std::string usage_text() {
  std::string text =
      "usage: efacoll-bench [options]   (under mpirun; LD_PRELOAD=libefacoll.so for the efacoll "
      "column)\n";
  for (const Spec& s : kSpecs) {
    std::string left = s.short_name ? std::string("-") + s.short_name + ", " : "    ";
    left += std::string("--") + s.long_name;
    if (s.meta) left += std::string(" ") + s.meta;
    left.resize(left.size() < 30 ? 30 : left.size() + 1, ' ');
    text += "  " + left + s.help + "\n";
  }
  text +=
      "Columns per implementation (efacoll, host MPI, NCCL): time (us, median over repeats of the "
      "mean\n"
      "per call, slowest rank), algbw and busbw (GB/s, nccl-tests' definitions), #wrong elements.\n"
      "Exit status: 0 ok, 1 wrong results, 2 usage or setup error, 3 plot not drawn.\n";
  return text;
}

}  // namespace efacoll_bench

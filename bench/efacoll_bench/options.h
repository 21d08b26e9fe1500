// efacoll-bench's command line: nccl-tests' short options where they exist (-b -e -f -c -n -w -o
// -d), long forms beside them, one table for parsing and for the usage text.
#ifndef EFACOLL_BENCH_OPTIONS_H
#define EFACOLL_BENCH_OPTIONS_H

#include <cstddef>
#include <string>

#include "bench_types.h"

namespace efacoll_bench {

// Where a machine-readable report goes; an empty file name means stdout.
struct ReportTarget {
  bool wanted = false;
  std::string file;
};

struct Options {
  size_t min_bytes = 8;
  size_t max_bytes = size_t{256} << 20;
  size_t factor = 2;
  bool check = true;
  int iters = 0;  // per repeat; 0: adaptive
  int warmup = 3;
  int repeats = 5;
  Collective collective = Collective::kAllreduce;
  DataType type = DataType::kFloat;
  ReduceOp op = ReduceOp::kSum;
  MemoryKind memory = MemoryKind::kHost;
  bool in_place = false;
  ReportTarget csv, json;
  std::string plot_file;
  bool nccl = true, host_mpi = true;
};

// Adaptive iterations aim at this much timed work per size and implementation, all repeats.
constexpr double kAdaptiveTargetSeconds = 0.2;

enum class ParseResult { kRun, kHelp, kError };

// On kError, *error says what was wrong (one line, no usage).
ParseResult parse_options(int argc, const char* const* argv, Options* out, std::string* error);
std::string usage_text();

// "256M" -> 268435456 (K, M, G: powers of 1024, either case); 0 for anything malformed.
size_t parse_bytes(const char* text);

}  // namespace efacoll_bench

#endif

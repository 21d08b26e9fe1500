#include "report.h"

#include "bandwidth.h"

namespace efacoll_bench {

size_t elements(const RunInfo& info, const Row& row) {
  return row.bytes / type_size(info.options.type);
}

double row_algbw(const RunInfo& info, const Row& row, size_t column) {
  return algbw_gbps(row.bytes, row.results[column].seconds);
}

double row_busbw(const RunInfo& info, const Row& row, size_t column) {
  return busbw_gbps(info.options.collective, info.nranks, row.bytes, row.results[column].seconds);
}

const char* redop_text(const RunInfo& info) {
  return reduces(info.options.collective) ? op_name(info.options.op) : "none";
}

std::string wrong_text(const Measurement& m) {
  return m.wrong < 0 ? "N/A" : std::to_string(m.wrong);
}

void print_cells(FILE* out, const char* format, const RunInfo& info, const Row& row) {
  for (size_t i = 0; i < info.columns.size(); ++i) {
    std::fprintf(out, format, row.results[i].seconds * 1e6, row_algbw(info, row, i),
                 row_busbw(info, row, i), wrong_text(row.results[i]).c_str());
  }
}

}  // namespace efacoll_bench

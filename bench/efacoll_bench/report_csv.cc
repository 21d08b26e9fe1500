// CSV: one header line, one line per size; per implementation time_us, algbw, busbw, wrong.
#include <string>

#include "report.h"

namespace efacoll_bench {

void write_csv(FILE* out, const RunInfo& info, const std::vector<Row>& rows) {
  std::fprintf(out, "size_bytes,count,type,redop");
  for (const Column& c : info.columns) {
    const char* k = c.key.c_str();
    std::fprintf(out, ",%s_time_us,%s_algbw_gbps,%s_busbw_gbps,%s_wrong", k, k, k, k);
  }
  std::fprintf(out, "\n");
  for (const Row& row : rows) {
    std::fprintf(out, "%zu,%zu,%s,%s", row.bytes, elements(info, row), type_name(info.options.type),
                 redop_text(info));
    print_cells(out, ",%.9g,%.9g,%.9g,%s", info, row);
    std::fprintf(out, "\n");
  }
  std::fflush(out);
}

}  // namespace efacoll_bench

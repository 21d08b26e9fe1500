// JSON: the run's description, the implementations, and one object per size.
#include <string>

#include "bandwidth.h"
#include "common/json_text.h"
#include "report.h"

namespace efacoll_bench {
namespace {

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.9g", v);
  return text;
}

// -1 (unknown, not checked) as null.
std::string count_or_null(long long v) { return v < 0 ? "null" : std::to_string(v); }

std::string or_null(const std::string& s) { return s.empty() ? "null" : efacoll::json_quoted(s); }

void write_description(FILE* out, const RunInfo& info) {
  const Options& o = info.options;
  std::fprintf(out, "  \"benchmark\": \"efacoll-bench\",\n");
  std::fprintf(out, "  \"collective\": %s,\n",
               efacoll::json_quoted(collective_name(o.collective)).c_str());
  std::fprintf(out, "  \"ranks\": %d,\n", info.nranks);
  std::fprintf(out, "  \"type\": %s,\n", efacoll::json_quoted(type_name(o.type)).c_str());
  std::fprintf(out, "  \"redop\": %s,\n", efacoll::json_quoted(redop_text(info)).c_str());
  std::fprintf(out, "  \"mem\": %s,\n", efacoll::json_quoted(memory_name(o.memory)).c_str());
  std::fprintf(out, "  \"in_place\": %s,\n", o.in_place ? "true" : "false");
  std::fprintf(out, "  \"check\": %s,\n", o.check ? "true" : "false");
  std::fprintf(out, "  \"iters\": %s,\n", o.iters > 0 ? std::to_string(o.iters).c_str() : "null");
  std::fprintf(out, "  \"warmup\": %d,\n  \"repeats\": %d,\n", o.warmup, o.repeats);
  std::fprintf(out, "  \"bus_factor\": %s,\n",
               number(bus_factor(o.collective, info.nranks)).c_str());
  std::fprintf(out, "  \"efacoll\": {\"loaded\": %s, \"provider\": %s},\n",
               info.efacoll_loaded ? "true" : "false", or_null(info.efacoll_provider).c_str());
  std::fprintf(out, "  \"host_mpi\": %s,\n", efacoll::json_quoted(info.host_mpi_version).c_str());
  std::fprintf(out, "  \"nccl\": %s,\n", or_null(info.nccl_version).c_str());
  std::fprintf(out, "  \"date\": %s,\n", efacoll::json_quoted(info.date).c_str());
  std::string notes;
  for (const std::string& n : info.notes)
    notes += (notes.empty() ? "" : ", ") + efacoll::json_quoted(n);
  std::fprintf(out, "  \"notes\": [%s],\n", notes.c_str());
  std::string columns;
  for (const Column& c : info.columns)
    columns += (columns.empty() ? "" : ", ") + std::string("{\"key\": ") +
               efacoll::json_quoted(c.key) + ", \"label\": " + efacoll::json_quoted(c.label) + "}";
  std::fprintf(out, "  \"implementations\": [%s],\n", columns.c_str());
}

void write_row(FILE* out, const RunInfo& info, const Row& row) {
  std::fprintf(out, "    {\"size\": %zu, \"count\": %zu, \"count_per_rank\": %zu, \"results\": {",
               row.bytes, elements(info, row), row.count_per_rank);
  for (size_t i = 0; i < info.columns.size(); ++i) {
    const Measurement& m = row.results[i];
    std::fprintf(out,
                 "%s\n      %s: {\"time_us\": %s, \"algbw_gbps\": %s, \"busbw_gbps\": %s, "
                 "\"wrong\": %s, \"passed_to_host_mpi\": %s, \"algorithm\": %s}",
                 i ? "," : "", efacoll::json_quoted(info.columns[i].key).c_str(),
                 number(m.seconds * 1e6).c_str(), number(row_algbw(info, row, i)).c_str(),
                 number(row_busbw(info, row, i)).c_str(), count_or_null(m.wrong).c_str(),
                 count_or_null(m.passed_to_host_mpi).c_str(), or_null(m.algorithm).c_str());
  }
  std::fprintf(out, "}}");
}

}  // namespace

void write_json(FILE* out, const RunInfo& info, const std::vector<Row>& rows) {
  std::fprintf(out, "{\n");
  write_description(out, info);
  std::fprintf(out, "  \"rows\": [");
  for (size_t r = 0; r < rows.size(); ++r) {
    std::fprintf(out, "%s\n", r ? "," : "");
    write_row(out, info, rows[r]);
  }
  std::fprintf(out, "\n  ]\n}\n");
  std::fflush(out);
}

}  // namespace efacoll_bench

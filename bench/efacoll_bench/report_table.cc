// The table: '#' header lines, then nccl-tests style aligned columns, one row per size.
#include <string>

#include "report.h"

namespace efacoll_bench {
namespace {

constexpr int kColumnWidth = 36;  // one implementation's four cells

std::string iters_text(const Options& o) {
  if (o.iters > 0) return std::to_string(o.iters);
  char text[64];
  std::snprintf(text, sizeof(text), "adaptive (~%.1f s per size and implementation)",
                kAdaptiveTargetSeconds);
  return text;
}

std::string efacoll_text(const RunInfo& info) {
  if (!info.efacoll_loaded)
    return "not loaded (no LD_PRELOAD=libefacoll.so): no efacoll column, MPI_* is the host MPI";
  if (info.efacoll_provider.empty()) return "loaded but inactive: no efacoll column";
  return "provider " + info.efacoll_provider;
}

// "---- label ----" centred over one implementation's cells.
std::string group_title(const std::string& label) {
  const int dashes = kColumnWidth - 4 - static_cast<int>(label.size());
  if (dashes < 2) return label;
  return std::string(dashes / 2, '-') + " " + label + " " + std::string(dashes - dashes / 2, '-');
}

}  // namespace

void print_table_header(FILE* out, const RunInfo& info) {
  const Options& o = info.options;
  std::fprintf(out, "# efacoll-bench: %s, %d ranks, type %s, op %s, mem %s, %s\n",
               collective_name(o.collective), info.nranks, type_name(o.type), redop_text(info),
               memory_name(o.memory), o.in_place ? "in place" : "out of place");
  std::fprintf(out, "# efacoll: %s\n", efacoll_text(info).c_str());
  std::fprintf(out, "# host MPI: %s\n", info.host_mpi_version.c_str());
  if (!info.nccl_version.empty()) std::fprintf(out, "# NCCL: %s\n", info.nccl_version.c_str());
  std::fprintf(out, "# date: %s\n", info.date.c_str());
  std::fprintf(out,
               "# sizes %zu .. %zu B, factor %zu; iters %s, warm-up %d; time = median of %d "
               "repeats of a batch's mean per call, slowest rank; check %s\n",
               o.min_bytes, o.max_bytes, o.factor, iters_text(o).c_str(), o.warmup, o.repeats,
               o.check ? "on" : "off");
  if (o.collective != Collective::kAllreduce)
    std::fprintf(out, "# size is the whole vector: %d blocks of the count per rank\n", info.nranks);
  for (const std::string& note : info.notes) std::fprintf(out, "# %s\n", note.c_str());
  std::fprintf(out, "#\n# %41s", "");
  for (const Column& c : info.columns)
    std::fprintf(out, "  %-*s", kColumnWidth - 2, group_title(c.label).c_str());
  std::fprintf(out, "\n# %12s %12s %8s %6s", "size", "count", "type", "redop");
  for (size_t i = 0; i < info.columns.size(); ++i)
    std::fprintf(out, "  %9s %8s %8s %6s", "time", "algbw", "busbw", "#wrong");
  std::fprintf(out, "\n# %12s %12s %8s %6s", "(B)", "(elements)", "", "");
  for (size_t i = 0; i < info.columns.size(); ++i)
    std::fprintf(out, "  %9s %8s %8s %6s", "(us)", "(GB/s)", "(GB/s)", "");
  std::fprintf(out, "\n");
  std::fflush(out);
}

void print_table_row(FILE* out, const RunInfo& info, const Row& row) {
  std::fprintf(out, "  %12zu %12zu %8s %6s", row.bytes, elements(info, row),
               type_name(info.options.type), redop_text(info));
  print_cells(out, "  %9.2f %8.2f %8.2f %6s", info, row);
  std::fprintf(out, "\n");
  std::fflush(out);
}

void print_table_footer(FILE* out, const RunInfo& info, const std::vector<Row>& rows) {
  if (rows.empty()) {
    std::fprintf(out, "# no size in range holds one element per rank\n");
    return;
  }
  std::string wrong, busbw, passed;
  for (size_t i = 0; i < info.columns.size(); ++i) {
    long long wrong_sum = 0, passed_sum = 0;
    double busbw_sum = 0;
    for (const Row& row : rows) {
      wrong_sum += row.results[i].wrong > 0 ? row.results[i].wrong : 0;
      passed_sum += row.results[i].passed_to_host_mpi > 0 ? row.results[i].passed_to_host_mpi : 0;
      busbw_sum += row_busbw(info, row, i);
    }
    const std::string sep = i ? ", " : "";
    wrong += sep + info.columns[i].label + " " + std::to_string(wrong_sum);
    char avg[64];
    std::snprintf(avg, sizeof(avg), " %.3f", busbw_sum / rows.size());
    busbw += sep + info.columns[i].label + avg;
    if (passed_sum > 0)
      passed += "# WARNING: " + info.columns[i].label + ": rank 0 passed " +
                std::to_string(passed_sum) +
                " calls to the host MPI (host buffers need EFACOLL_HOST_BUFFERS=1; "
                "EFACOLL_STATS=1 says why)\n";
  }
  std::fprintf(out, "# #wrong elements: %s%s\n", wrong.c_str(),
               info.options.check ? "" : " (not checked)");
  std::fprintf(out, "# avg busbw (GB/s): %s\n", busbw.c_str());
  std::fputs(passed.c_str(), out);
  std::fflush(out);
}

}  // namespace efacoll_bench

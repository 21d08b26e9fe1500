// What a run measured and the three ways of writing it: the nccl-tests style table (streamed,
// one row per size as it is measured), CSV and JSON (written at the end).
#ifndef EFACOLL_BENCH_REPORT_H
#define EFACOLL_BENCH_REPORT_H

#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

#include "options.h"

namespace efacoll_bench {

// One implementation's columns: efacoll, the host MPI (PMPI), NCCL.
struct Column {
  std::string key;    // in CSV and JSON: efacoll, host_mpi, nccl
  std::string label;  // in the table and the plot
};

struct Measurement {
  double seconds = 0;    // median over repeats of the mean per call, slowest rank
  long long wrong = -1;  // summed over ranks; -1: not checked
  // Calls efacoll handed to the host MPI during this measurement (rank 0); -1: unknown.
  long long passed_to_host_mpi = -1;
  std::string algorithm;  // efacoll's choice for the size, where it says
};

struct Row {
  size_t bytes = 0;                  // nccl-tests' size S
  size_t count_per_rank = 0;         // the count argument of the call
  std::vector<Measurement> results;  // one per column, in column order
};

struct RunInfo {
  Options options;
  int nranks = 1;
  bool efacoll_loaded = false;
  std::string efacoll_provider;  // empty: not loaded or inactive
  std::string host_mpi_version;  // MPI_Get_library_version's first line
  std::string nccl_version;      // empty: no NCCL column
  std::string date;
  std::vector<std::string> notes;  // extra header lines, said as they are
  std::vector<Column> columns;
};

// Elements in S (nccl-tests' count column).
size_t elements(const RunInfo& info, const Row& row);
double row_algbw(const RunInfo& info, const Row& row, size_t column);
double row_busbw(const RunInfo& info, const Row& row, size_t column);

// The op column: allgather reduces nothing ("none", as in nccl-tests).
const char* redop_text(const RunInfo& info);
// "N/A" where nothing was checked.
std::string wrong_text(const Measurement& m);
// One row's cells, column by column, with `format` taking time (us), algbw, busbw and #wrong.
void print_cells(FILE* out, const char* format, const RunInfo& info, const Row& row);

void print_table_header(FILE* out, const RunInfo& info);
void print_table_row(FILE* out, const RunInfo& info, const Row& row);
void print_table_footer(FILE* out, const RunInfo& info, const std::vector<Row>& rows);

void write_csv(FILE* out, const RunInfo& info, const std::vector<Row>& rows);
void write_json(FILE* out, const RunInfo& info, const std::vector<Row>& rows);

}  // namespace efacoll_bench

#endif

// efacoll-bench: nccl-tests' table and OSU's habits in one program. Each size runs through
// efacoll (MPI_*, sent to libefacoll.so by LD_PRELOAD), through the host MPI (PMPI_*) and, for GPU
// buffers where libnccl.so.2 loads, through NCCL, in one run.
//   mpirun -np 4 -x LD_PRELOAD=libefacoll.so -x EFACOLL_PROVIDER=tcp -x EFACOLL_HOST_BUFFERS=1
//       efacoll-bench -b 8 -e 16M -f 4 --json run.json --plot run.png
#include <mpi.h>

#include <climits>
#include <cstdio>
#include <string>
#include <vector>

#include "bandwidth.h"
#include "buffers.h"
#include "device.h"
#include "efacoll_api.h"
#include "environment.h"
#include "implementations.h"
#include "measure.h"
#include "nccl_column.h"
#include "options.h"
#include "plot.h"
#include "progress.h"
#include "report.h"

using namespace efacoll_bench;

namespace {

constexpr int kExitWrong = 1, kExitSetup = 2, kExitPlot = 3;

// Ends the run before any measurement, all ranks alike; `teller` (or none, -1) says why.
int finish_early(int rank, int teller, const std::string& message, int code) {
  if (rank == teller) std::fprintf(code == 0 ? stdout : stderr, "%s", message.c_str());
  MPI_Finalize();
  return code;
}

// Rank 0's report files, opened before the run so that a bad path costs no time. nullptr where
// not wanted; stdout for an empty file name.
struct ReportFiles {
  FILE* csv = nullptr;
  FILE* json = nullptr;
  bool table = true;  // off when CSV or JSON takes stdout

  bool open(const Options& o, std::string* error) {
    auto open_one = [&](const ReportTarget& t, FILE** f) {
      if (!t.wanted) return true;
      *f = t.file.empty() ? stdout : std::fopen(t.file.c_str(), "w");
      if (!*f) *error = "cannot write " + t.file;
      return *f != nullptr;
    };
    table = !(o.csv.wanted && o.csv.file.empty()) && !(o.json.wanted && o.json.file.empty());
    return open_one(o.csv, &csv) && open_one(o.json, &json);
  }
  void close() {
    for (FILE* f : {csv, json}) {
      if (f && f != stdout) std::fclose(f);
    }
  }
};

struct Bench {
  CallSetup setup;
  std::vector<Impl> impls;  // one per column
  RunInfo info;
  EfacollApi efacoll;
};

Measurement measure_one(Bench& b, const CheckPattern& pattern, Impl impl, size_t count) {
  const Collective coll = b.setup.options.collective;
  Measurement m;
  const long long passed_before = impl == Impl::kEfacoll ? b.efacoll.passed_to_host_mpi(coll) : -1;
  if (b.setup.options.check) m.wrong = checked_call(b.setup, pattern, impl, count);
  m.seconds = measure_seconds(b.setup.options, [&] { run_call(b.setup, impl, count); });
  if (impl == Impl::kEfacoll && passed_before >= 0) {
    m.passed_to_host_mpi = b.efacoll.passed_to_host_mpi(coll) - passed_before;
    if (m.passed_to_host_mpi == 0) m.algorithm = b.efacoll.last_algorithm();
  }
  return m;
}

// The columns and the header's notes; NCCL is set up here when it has a column.
void choose_columns(Bench& b, NcclLibrary* nccl) {
  const Options& o = b.setup.options;
  RunInfo& info = b.info;
  if (b.efacoll.loaded && !b.efacoll.provider.empty()) {
    b.impls.push_back(Impl::kEfacoll);
    info.columns.push_back({"efacoll", "efacoll"});
  }
  if (o.host_mpi) {
    b.impls.push_back(Impl::kHostMpi);
    info.columns.push_back(
        {"host_mpi", b.setup.host_mpi_staged ? "host MPI (staged)" : "host MPI"});
    if (b.setup.host_mpi_staged)
      info.notes.push_back(
          "host MPI (staged): it is not CUDA-aware, so each call copies the input to pinned host "
          "memory, runs PMPI there and copies the result back, all timed");
  }
  std::string why;
  if (setup_nccl_column(o, nccl, &b.setup.nccl_stream, &why)) {
    b.setup.nccl = nccl;
    b.impls.push_back(Impl::kNccl);
    info.columns.push_back({"nccl", "NCCL"});
    info.nccl_version = nccl->version;
    info.notes.push_back("NCCL_NVLS_ENABLE=0 (set by efacoll-bench)");
  } else if (o.nccl && o.memory == MemoryKind::kDevice) {
    info.notes.push_back("no NCCL column: " + why);
  }
}

// Returns the wrong elements over the run, all columns.
long long run_sizes(Bench& b, const CheckPattern& pattern, ReportFiles& files,
                    std::vector<Row>* rows) {
  const Options& o = b.setup.options;
  const bool rank0 = b.setup.rank == 0;
  const std::vector<SizeStep> steps =
      size_steps(o.collective, b.setup.nranks, o.type, o.min_bytes, o.max_bytes, o.factor);
  Progress progress(rank0, stderr);
  long long wrong = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    progress.update(i, steps.size(), steps[i].bytes);
    Row row;
    row.bytes = steps[i].bytes;
    row.count_per_rank = steps[i].count_per_rank;
    for (Impl impl : b.impls) {
      row.results.push_back(measure_one(b, pattern, impl, row.count_per_rank));
      wrong += row.results.back().wrong > 0 ? row.results.back().wrong : 0;
    }
    if (rank0 && files.table) {
      progress.clear();
      print_table_row(stdout, b.info, row);
    }
    rows->push_back(row);
  }
  progress.clear();
  return wrong;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::string error;
  const ParseResult parsed = parse_options(argc, argv, &o, &error);
  // The GPU is chosen before MPI_Init: efacoll starts on the GPU it will be given buffers of.
  std::string gpu_error;
  const bool gpu_ok = parsed != ParseResult::kRun || o.memory != MemoryKind::kDevice ||
                      gpu_select(launcher_local_rank(), &gpu_error);
  MPI_Init(&argc, &argv);
  Bench b;
  MPI_Comm_rank(MPI_COMM_WORLD, &b.setup.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &b.setup.nranks);
  const int rank = b.setup.rank, nranks = b.setup.nranks;
  if (parsed == ParseResult::kHelp) return finish_early(rank, 0, usage_text(), 0);
  if (parsed == ParseResult::kError)
    return finish_early(rank, 0, "efacoll-bench: " + error + "\n" + usage_text(), kExitSetup);

  const size_t max_count = count_per_rank(o.collective, nranks, o.type, o.max_bytes);
  if (max_count == 0 || max_count > INT_MAX)
    return finish_early(rank, 0,
                        "efacoll-bench: -e " + std::to_string(o.max_bytes) + " gives " +
                            std::to_string(max_count) +
                            " elements per rank; MPI needs 1 .. INT_MAX\n",
                        kExitSetup);
  const int no_gpu = first_failing_rank(!gpu_ok);
  if (no_gpu >= 0)
    return finish_early(rank, no_gpu,
                        "efacoll-bench: --mem device: rank " + std::to_string(rank) +
                            " has no usable GPU (" + gpu_error + ")\n",
                        kExitSetup);
  ReportFiles files;
  const bool files_ok = rank != 0 || files.open(o, &error);
  if (first_failing_rank(!files_ok) >= 0)
    return finish_early(rank, 0, "efacoll-bench: " + error + "\n", kExitSetup);

  b.setup.options = o;
  b.setup.host_mpi_staged = o.memory == MemoryKind::kDevice && !host_mpi_takes_gpu_buffers();
  Buffers buffers(o, rank, nranks, max_count);
  const int no_memory = first_failing_rank(!buffers.allocate(b.setup.host_mpi_staged, &error));
  if (no_memory >= 0)
    return finish_early(rank, no_memory,
                        "efacoll-bench: rank " + std::to_string(rank) + ": " + error + "\n",
                        kExitSetup);
  b.setup.buffers = &buffers;
  const CheckPattern pattern(o.collective, o.type, o.op, nranks);
  // Valid data from the start, also when nothing is checked (garbage floats can be slow ones).
  if (!buffers.write_inputs(buffers.layout(max_count, InPlaceStyle::kMpi), pattern))
    fail("writing the inputs", gpu_last_error());

  b.efacoll = find_efacoll();
  NcclLibrary nccl;
  choose_columns(b, &nccl);
  if (b.impls.empty())
    return finish_early(rank, 0,
                        "efacoll-bench: nothing to measure: efacoll is not loaded (or inactive), "
                        "--no-host-mpi, and no NCCL column\n",
                        kExitSetup);
  RunInfo& info = b.info;
  info.options = o;
  info.nranks = nranks;
  info.efacoll_loaded = b.efacoll.loaded;
  info.efacoll_provider = b.efacoll.provider;
  info.host_mpi_version = host_mpi_version();
  info.date = date_now();
  if (o.memory == MemoryKind::kDevice) {
    const std::vector<std::string> gpus = gather_lines(gpu_describe());
    for (size_t r = 0; r < gpus.size(); ++r)
      info.notes.push_back("rank " + std::to_string(r) + ": " + gpus[r]);
  }
  if (rank == 0 && !o.plot_file.empty() && !gnuplot_found())
    std::fprintf(stderr,
                 "efacoll-bench: --plot: gnuplot not found on PATH (Debian/Ubuntu: apt-get install "
                 "gnuplot-nox): the table comes, the picture will not\n");
  if (rank == 0 && files.table) print_table_header(stdout, info);

  std::vector<Row> rows;
  const long long wrong = run_sizes(b, pattern, files, &rows);
  if (rank == 0) {
    if (files.table) print_table_footer(stdout, info, rows);
    if (files.csv) write_csv(files.csv, info, rows);
    if (files.json) write_json(files.json, info, rows);
    files.close();
  }
  if (b.setup.nccl) b.setup.nccl->comm_destroy(b.setup.nccl->comm);
  MPI_Finalize();

  // After MPI_Finalize: gnuplot is a child process, which some MPI transports dislike.
  if (rank == 0 && !o.plot_file.empty()) {
    std::fflush(stdout);
    if (!draw_plot(o.plot_file, info, rows, &error)) {
      std::fprintf(stderr, "efacoll-bench: --plot: %s\n", error.c_str());
      return kExitPlot;
    }
  }
  return wrong > 0 ? kExitWrong : 0;
}

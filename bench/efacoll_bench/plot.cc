#include "plot.h"

#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace efacoll_bench {
namespace {

bool on_path(const char* program) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  for (size_t start = 0; start <= dirs.size();) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    if (access(((dir.empty() ? "." : dir) + "/" + program).c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

// A gnuplot single-quoted string: quotes inside are doubled.
std::string gnuplot_string(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("''") : std::string(1, c);
  return q + "'";
}

bool write_data(const std::string& path, const RunInfo& info, const std::vector<Row>& rows) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return false;
  std::fprintf(f, "# busbw (GB/s) by size (B)\n# size");
  for (const Column& c : info.columns) std::fprintf(f, "  \"%s\"", c.label.c_str());
  std::fprintf(f, "\n");
  for (const Row& row : rows) {
    std::fprintf(f, "%zu", row.bytes);
    for (size_t i = 0; i < info.columns.size(); ++i)
      std::fprintf(f, " %.9g", row_busbw(info, row, i));
    std::fprintf(f, "\n");
  }
  return std::fclose(f) == 0;
}

bool write_script(const std::string& path, const std::string& png, const std::string& data,
                  const RunInfo& info) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return false;
  const Options& o = info.options;
  std::string title = std::string(collective_name(o.collective)) + ", " + type_name(o.type);
  if (reduces(o.collective)) title += std::string(" ") + op_name(o.op);
  title += ", " + std::to_string(info.nranks) + " ranks, mem " + memory_name(o.memory);
  if (o.in_place) title += ", in place";
  std::fprintf(f,
               "# Drawn by efacoll-bench; run `gnuplot %s` to draw it again.\n"
               "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
               "  set terminal pngcairo size 1000,600 noenhanced\n"
               "} else {\n"
               "  set terminal png size 1000,600 noenhanced\n"
               "}\n"
               "set output %s\n"
               "set title %s\n"
               "set logscale x 2\n"
               "set format x '%%.0b%%B'\n"
               "set xlabel 'size (bytes)'\n"
               "set ylabel 'busbw (GB/s)'\n"
               "set key left top\n"
               "set grid\n"
               "plot ",
               path.c_str(), gnuplot_string(png).c_str(), gnuplot_string(title).c_str());
  for (size_t i = 0; i < info.columns.size(); ++i) {
    std::fprintf(f, "%s%s using 1:%zu with linespoints linewidth 2 title %s",
                 i ? ", \\\n     " : "", i ? "''" : gnuplot_string(data).c_str(), i + 2,
                 gnuplot_string(info.columns[i].label).c_str());
  }
  std::fprintf(f, "\n");
  return std::fclose(f) == 0;
}

// Runs `gnuplot script`; its own messages go to our stderr.
bool run_gnuplot(const std::string& script, std::string* error) {
  const char* argv[] = {"gnuplot", script.c_str(), nullptr};
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, "gnuplot", nullptr, nullptr, const_cast<char* const*>(argv), environ);
  if (rc != 0) {
    *error = std::string("cannot run gnuplot: ") + std::strerror(rc);
    return false;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    *error = "gnuplot failed on " + script;
    return false;
  }
  return true;
}

}  // namespace

bool gnuplot_found() { return on_path("gnuplot"); }

bool draw_plot(const std::string& png, const RunInfo& info, const std::vector<Row>& rows,
               std::string* error) {
  if (rows.empty()) {
    *error = "nothing to plot: no size was measured";
    return false;
  }
  if (!gnuplot_found()) {
    *error =
        "gnuplot not found on PATH: install it (Debian/Ubuntu: apt-get install gnuplot-nox) "
        "to draw " +
        png;
    return false;
  }
  const size_t dot = png.rfind(".png");
  const std::string stem =
      dot != std::string::npos && dot + 4 == png.size() ? png.substr(0, dot) : png;
  const std::string data = stem + ".dat", script = stem + ".gp";
  if (!write_data(data, info, rows) || !write_script(script, png, data, info)) {
    *error = "cannot write " + data + " or " + script + ": " + std::strerror(errno);
    return false;
  }
  unlink(png.c_str());  // so that an old picture never passes for a new one
  if (!run_gnuplot(script, error)) return false;
  struct stat st;
  if (stat(png.c_str(), &st) != 0 || st.st_size == 0) {
    *error = "gnuplot ran but wrote no " + png;
    return false;
  }
  return true;
}

}  // namespace efacoll_bench

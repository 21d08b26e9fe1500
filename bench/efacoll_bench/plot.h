// --plot FILE.png: busbw against size, one line per implementation, drawn by gnuplot. The data
// (FILE.dat) and the script (FILE.gp) stay beside the picture, to redraw it another way.
#ifndef EFACOLL_BENCH_PLOT_H
#define EFACOLL_BENCH_PLOT_H

#include <string>
#include <vector>

#include "report.h"

namespace efacoll_bench {

// Whether gnuplot is on PATH: asked before a long run, so that its absence is said early.
bool gnuplot_found();

// false, with *error, when the picture was not drawn (gnuplot missing or failing, no rows).
bool draw_plot(const std::string& png, const RunInfo& info, const std::vector<Row>& rows,
               std::string* error);

}  // namespace efacoll_bench

#endif

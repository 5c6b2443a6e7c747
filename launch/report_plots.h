// The plots of `tierzero report`: the run's series as tab-separated data files and one gnuplot script
// that draws each as a PNG (pngcairo), run with gnuplot (Debian's gnuplot-nox).
#pragma once

#include <string>
#include <vector>

#include "launch/metrics_reader.h"

namespace tz {

struct Plot {
  std::string file;   // "loss.png", in the output folder
  std::string title;  // what it shows
};

// Writes the data files, the script (report.gp) and the PNGs into `dir`; returns the plots in the order
// the page shows them. Throws when gnuplot is missing or fails, with its message.
std::vector<Plot> render_plots(const MetricsRun& run, const std::string& dir);

}  // namespace tz

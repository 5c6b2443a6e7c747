// The page of `tierzero report`: one self-contained HTML file (the PNGs inline as data URIs) with the
// run's settings and figures beside the plots.
#pragma once

#include <string>
#include <vector>

#include "launch/metrics_reader.h"
#include "launch/report_plots.h"

namespace tz {

// The page's text: `source` names the metrics file; the plots are read from `dir`.
std::string report_html(const MetricsRun& run, const std::vector<Plot>& plots, const std::string& dir,
                        const std::string& source);

}  // namespace tz

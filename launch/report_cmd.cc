// `tierzero report FILE [--out DIR]`: a --metrics file as PNG plots (gnuplot) and one self-contained
// HTML page with the run's settings (docs/metrics.md, "tierzero report"). It reads a file still being
// written and one cut off by a kill. The folder appears whole: written beside DIR and renamed into place,
// exchanged atomically with an earlier report there (never with a folder that is not a report).
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <boost/program_options.hpp>

#include "core/error.h"
#include "launch/commands.h"
#include "launch/flag_table.h"
#include "launch/metrics_reader.h"
#include "launch/parse_args.h"
#include "launch/report_html.h"
#include "launch/report_plots.h"
#include "model/file_io.h"
#include "model/protected_inputs.h"

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace tz {
namespace {

struct ReportFlags {
  std::string file, out;
};

po::options_description report_options(ReportFlags& f) {
  po::options_description desc(
      "tierzero report FILE [--out DIR]: plots of a --metrics file (loss, throughput, phases, memory against the "
      "plan, NVMe, the slowest rank) as PNG and one HTML page (docs/metrics.md)\n\nflags");
  desc.add_options()("help,h", "print this help")(
      "file", po::value(&f.file), "FILE, also given as the first argument: a --metrics file, finished, still being "
      "written or cut off by a kill")(
      "out", po::value(&f.out)->default_value(""),
      "the report folder (default: FILE without .jsonl, then -report); an earlier report there is replaced whole");
  return desc;
}

// The folder's plots and page are this command's: a folder holding anything else is refused.
bool is_report_folder(const fs::path& p) {
  std::error_code ec;
  if (fs::is_empty(p, ec) && !ec) return true;
  return fs::is_regular_file(p / "report.html", ec) && fs::is_regular_file(p / "report.gp", ec);
}

int report(const std::vector<std::string>& args) {
  ReportFlags f;
  po::options_description desc = report_options(f);
  po::positional_options_description pos;
  pos.add("file", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
    if (vm.count("help")) {
      std::cout << desc << "\n";
      return 0;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    TZ_FAIL("tierzero report: ", e.what(), "; see `tierzero report --help`");
  }
  TZ_CHECK(!f.file.empty(), "tierzero report needs a metrics file: tierzero report run.jsonl [--out DIR]");
  if (f.out.empty()) {
    std::string base = f.file;
    if (base.size() > 6 && base.substr(base.size() - 6) == ".jsonl") base.resize(base.size() - 6);
    f.out = base + "-report";
  }
  const ProtectedInput input(f.file, "the metrics file");
  check_output_target(f.out, "--out", OutputKind::folder);  // not an input, a device, a FIFO or a checkpoint tree
  const fs::path out = fs::path(f.out).lexically_normal();
  std::error_code ec;
  if (fs::exists(out, ec))
    TZ_CHECK(fs::is_directory(out, ec) && is_report_folder(out), "--out '", f.out,
             "' holds files that are not a tierzero report: a report replaces only an earlier report or an empty folder; "
             "give another --out");
  const MetricsRun run = read_metrics(f.file);
  const fs::path parent = out.has_parent_path() ? out.parent_path() : fs::path(".");
  std::string hidden(1, '.');  // appended piece by piece: GCC 12 warns (-Wrestrict) on one long + chain here
  hidden.append(out.filename().string()).append(".tmp-").append(std::to_string(getpid()));
  const fs::path tmp = parent / hidden;
  fs::remove_all(tmp, ec);
  TZ_CHECK(fs::create_directories(tmp, ec) && !ec, "--out '", f.out, "': cannot create '", tmp.string(), "' (",
           ec.message(), "); check that '", parent.string(), "' exists and is writable");
  struct Cleanup {
    fs::path p;
    ~Cleanup() {
      std::error_code e;
      if (!p.empty()) fs::remove_all(p, e);
    }
  } cleanup{tmp};
  const std::vector<Plot> plots = render_plots(run, tmp.string());
  const std::string html = report_html(run, plots, tmp.string(), f.file);
  {
    std::ofstream page(tmp / "report.html");
    page << html;
    page.flush();
    TZ_CHECK(page.good(), "cannot write the report page in '", tmp.string(), "': check that the disk has room");
  }
  if (fs::exists(out, ec)) {
    // The earlier report and the new one change places in one step; the earlier one is then removed.
    TZ_CHECK(renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, out.c_str(), RENAME_EXCHANGE) == 0, "--out '", f.out,
             "': cannot replace the earlier report (", std::strerror(errno), ")");
  } else {
    TZ_CHECK(std::rename(tmp.c_str(), out.c_str()) == 0, "--out '", f.out, "': cannot move the report into place (",
             std::strerror(errno), ")");
    cleanup.p.clear();
  }
  sync_folder(parent.string());
  std::printf("wrote %s/report.html and %zu plots from %zu training steps%s%s of %s\n", f.out.c_str(), plots.size(),
              run.steps.size(), run.resumes ? " (resumed)" : "", run.cut_last_line ? ", its partial last line left out" : "",
              f.file.c_str());
  return 0;
}

}  // namespace

std::vector<FlagTable> report_flag_tables() { return {flag_table("report", report_options)}; }

int report_command(const std::vector<std::string>& args) { return report(args); }

}  // namespace tz

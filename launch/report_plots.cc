// render_plots: series out of the records, a gnuplot script, gnuplot run on it.
#include "launch/report_plots.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "core/error.h"
#include "launch/signal_routing.h"
#include "model/file_io.h"

extern char** environ;

namespace tz {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string cell(double v) {
  if (!std::isfinite(v)) return "NaN";
  std::ostringstream os;
  os.precision(9);
  os << v;
  return os.str();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  TZ_CHECK(out.good(), "cannot write ", path, ": check that the report folder's disk has room");
}

// Runs `gnuplot SCRIPT` in `dir`; its messages go to DIR/gnuplot.log.
void run_gnuplot(const std::string& dir, const std::string& script) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  const std::string log = dir + "/gnuplot.log";
  posix_spawn_file_actions_addchdir_np(&fa, dir.c_str());  // the script names its files relative to the folder
  posix_spawn_file_actions_addopen(&fa, 1, "gnuplot.log", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  std::string arg0 = "gnuplot", arg1 = script;
  char* argv[] = {arg0.data(), arg1.data(), nullptr};
  pid_t pid = 0;
  posix_spawnattr_t attr;
  spawn_with_no_signals_blocked(attr);  // gnuplot gets a SIGTERM as any process does
  const int rc = posix_spawnp(&pid, "gnuplot", &fa, &attr, argv, environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  TZ_CHECK(rc == 0, "cannot run gnuplot (", std::strerror(rc), "): `tierzero report` draws its plots with it; ",
           rc == ENOENT ? "install it (apt install gnuplot-nox; scripts/install-deps.sh does)" : "check that it runs");
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  std::string msg = read_small_file(log, "gnuplot's messages", 1 << 20);
  if (msg.size() > 2000) msg = msg.substr(0, 2000) + "...";
  TZ_FAIL("gnuplot failed drawing the report (", WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                                                    : std::string("killed by a signal"),
          "): ", msg, "; the script is ", script);
}

}  // namespace

std::vector<Plot> render_plots(const MetricsRun& run, const std::string& dir) {
  const double per_step = metrics_number(run.run, "tokens_per_step");
  const int world = std::isfinite(metrics_number(run.run, "world_size")) ? int(metrics_number(run.run, "world_size")) : 1;
  // steps.tsv: step tokens loss tok/s, the phases stacked (data, +forward, +backward, +optimizer), hidden
  // fraction, device host nvme MiB, the two NVMe rates, slowest rank, straggler, then every rank's host MiB.
  std::ostringstream steps;
  double tokens = 0;
  bool any_nvme = false, any_ranks = false;
  int ranks_bytes = 0;
  for (const StepRow& j : run.steps) {
    const double s = j.step;
    double t = j.tokens;
    if (!std::isfinite(t)) t = std::isfinite(per_step) ? s * per_step : tokens + j.tokens_per_s * j.step_ms / 1e3;
    tokens = t;
    const double d = j.data_ms, f = j.forward_ms, b = j.backward_ms, o = j.optimizer_ms;
    const double g1 = j.nvme_gbps, g2 = j.nvme_params_gbps;
    any_nvme |= std::isfinite(g1) || std::isfinite(g2);
    double slowest = j.slowest_rank;
    any_ranks |= std::isfinite(slowest);
    if (!std::isfinite(slowest)) slowest = 0;
    steps << cell(s) << '\t' << cell(t) << '\t' << cell(j.loss) << '\t' << cell(j.tokens_per_s) << '\t' << cell(d) << '\t'
          << cell(d + f) << '\t' << cell(d + f + b) << '\t' << cell(d + f + b + o) << '\t' << cell(j.hidden_fraction) << '\t'
          << cell(j.device_bytes / 1048576) << '\t' << cell(j.host_bytes / 1048576) << '\t' << cell(j.nvme_bytes / 1048576)
          << '\t' << cell(std::isfinite(g1) ? g1 : 0) << '\t' << cell(std::isfinite(g2) ? g2 : 0) << '\t' << cell(slowest)
          << '\t' << cell(j.straggler_rank);
    ranks_bytes = std::max(ranks_bytes, int(j.rank_host_bytes.size()));
    for (double hb : j.rank_host_bytes) steps << '\t' << cell(hb / 1048576);
    steps << '\n';
  }
  write_text(dir + "/steps.tsv", steps.str());
  std::ostringstream val;
  for (const auto& [s, v] : run.val) val << s << '\t' << cell(std::isfinite(per_step) ? s * per_step : kNaN) << '\t' << cell(v) << '\n';
  if (run.val.empty()) val << "NaN\tNaN\tNaN\n";  // gnuplot refuses an empty file
  write_text(dir + "/val.tsv", val.str());

  const double plan_dev = metrics_number(run.run, "plan_peak_bytes.device") / 1048576;
  const double plan_host = metrics_number(run.run, "plan_peak_bytes.host") / 1048576;
  const double plan_nvme = metrics_number(run.run, "plan_peak_bytes.nvme") / 1048576;
  std::ostringstream gp;
  gp << "set terminal pngcairo size 900,480 font 'sans,10'\n"
        "set datafile missing 'NaN'\nset datafile separator '\\t'\nset grid\nset key outside right top\n"
        "set style fill transparent solid 0.6 noborder\n";
  auto plot = [&](const std::string& file, const std::string& title, const std::string& body) {
    gp << "set output '" << file << "'\nset title \"" << title << "\"\n" << body << "\nunset label\nunset yrange\n";
  };
  std::vector<Plot> plots;
  plots.push_back({"loss.png", "Loss and validation loss by step"});
  plot("loss.png", plots.back().title,
       "set xlabel 'step'\nset ylabel 'nats'\nplot 'steps.tsv' u 1:3 w l lw 1.5 t 'loss', 'val.tsv' u 1:3 w lp pt 7 lw 2 t 'validation loss'");
  plots.push_back({"loss_tokens.png", "Loss and validation loss by tokens trained"});
  plot("loss_tokens.png", plots.back().title,
       "set xlabel 'tokens'\nset ylabel 'nats'\nplot 'steps.tsv' u 2:3 w l lw 1.5 t 'loss', 'val.tsv' u 2:3 w lp pt 7 lw 2 t 'validation loss'");
  plots.push_back({"throughput.png", "Tokens per second (the whole job)"});
  plot("throughput.png", plots.back().title, "set xlabel 'step'\nset ylabel 'tokens/s'\nplot 'steps.tsv' u 1:4 w l t 'tokens/s'");
  plots.push_back({"phases.png", "Time per phase, stacked (rank 0)"});
  plot("phases.png", plots.back().title,
       "set xlabel 'step'\nset ylabel 'ms'\nplot 'steps.tsv' u 1:5 w filledcurves x1 t 'data', '' u 1:6:5 w filledcurves t 'forward', "
       "'' u 1:7:6 w filledcurves t 'backward', '' u 1:8:7 w filledcurves t 'optimizer'");
  plots.push_back({"comm_hidden.png", "Share of communication hidden behind compute"});
  plot("comm_hidden.png", plots.back().title,
       "set xlabel 'step'\nset ylabel 'fraction'\nset yrange [0:1.05]\nplot 'steps.tsv' u 1:9 w l t 'hidden fraction'");
  std::ostringstream mem;
  mem << "set xlabel 'step'\nset ylabel 'MiB'\nplot 'steps.tsv' u 1:10 w l lw 2 t 'device (rank 0)', '' u 1:11 w l lw 2 t 'host (rank 0)', "
         "'' u 1:12 w l lw 2 t 'nvme (rank 0)'";
  for (int r = 1; r < ranks_bytes; ++r) mem << ", '' u 1:" << 17 + r << " w l dt 2 t 'host (rank " << r << ")'";
  if (std::isfinite(plan_dev)) mem << ", " << cell(plan_dev) << " w l dt 3 lw 2 t 'plan: device'";
  if (std::isfinite(plan_host)) mem << ", " << cell(plan_host) << " w l dt 3 lw 2 t 'plan: host'";
  if (std::isfinite(plan_nvme) && plan_nvme > 0) mem << ", " << cell(plan_nvme) << " w l dt 3 lw 2 t 'plan: nvme'";
  plots.push_back({"memory.png", "Bytes in use per tier against the plan's peak"});
  plot("memory.png", plots.back().title, mem.str());
  plots.push_back({"nvme.png", "NVMe rate (optimizer swap and parameter shards)"});
  plot("nvme.png", plots.back().title,
       std::string(any_nvme ? "" : "set label 1 'no NVMe traffic in this run' at graph 0.5, graph 0.6 center font 'sans,14'\nset yrange [-1:1]\n") +
           "set xlabel 'step'\nset ylabel 'GB/s'\nplot 'steps.tsv' u 1:13 w l lw 2 t 'optimizer swap', '' u 1:14 w l lw 2 t 'parameter shards'");
  plots.push_back({"slowest_rank.png", any_ranks ? "The slowest rank per step, and a named straggler"
                                                 : "The slowest rank per step (this file has one rank's figures)"});
  plot("slowest_rank.png", plots.back().title,
       "set xlabel 'step'\nset ylabel 'rank'\nset yrange [-0.5:" + std::to_string(world) +
           "-0.5]\nset ytics 1\nplot 'steps.tsv' u 1:15 w p pt 7 ps 0.6 t 'slowest rank', '' u 1:16 w p pt 6 ps 2 lw 2 t 'straggler'\nset ytics autofreq");
  write_text(dir + "/report.gp", gp.str());
  run_gnuplot(dir, "report.gp");
  return plots;
}

}  // namespace tz

// report_html: settings, a summary, and each plot inline.
#include "launch/report_html.h"

#include <cmath>
#include <sstream>

#include "model/file_io.h"

namespace tz {
namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

std::string base64(const std::string& in) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < in.size(); i += 3) {
    const unsigned b0 = (unsigned char)in[i], b1 = i + 1 < in.size() ? (unsigned char)in[i + 1] : 0,
                   b2 = i + 2 < in.size() ? (unsigned char)in[i + 2] : 0;
    out += k[b0 >> 2];
    out += k[((b0 & 3) << 4) | (b1 >> 4)];
    out += i + 1 < in.size() ? k[((b1 & 15) << 2) | (b2 >> 6)] : '=';
    out += i + 2 < in.size() ? k[b2 & 63] : '=';
  }
  return out;
}

std::string text_of(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

}  // namespace

std::string report_html(const MetricsRun& run, const std::vector<Plot>& plots, const std::string& dir,
                        const std::string& source) {
  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>tierzero report: " << escape(source)
    << "</title>\n<style>body{font-family:sans-serif;margin:2em;max-width:1000px}table{border-collapse:collapse}"
       "td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}img{max-width:100%}</style></head><body>\n";
  h << "<h1>tierzero report</h1>\n<p>From <code>" << escape(source) << "</code>";
  if (run.run.contains("run_id")) h << ", run <code>" << escape(text_of(run.run["run_id"])) << "</code>";
  h << ": " << run.steps.size() << " training steps (" << run.steps.front().step << " to " << run.steps.back().step
    << ")";
  if (run.resumes) h << ", resumed " << run.resumes << (run.resumes == 1 ? " time" : " times");
  if (!run.val.empty()) h << ", last validation loss " << run.val.back().second << " at step " << run.val.back().first;
  h << ".";
  if (run.cut_last_line) h << " The file ended in a partial line (a run still writing, or one killed): it is left out.";
  if (run.unreadable) h << " " << run.unreadable << " lines were not JSON records and are left out.";
  h << "</p>\n";
  if (run.run.contains("settings") && run.run["settings"].is_object()) {
    h << "<h2>Settings</h2>\n<table>\n";
    for (const auto& [k, v] : run.run["settings"].items())
      h << "<tr><th>" << escape(k) << "</th><td>" << escape(text_of(v)) << "</td></tr>\n";
    for (const char* k : {"world_size", "steps", "tokens_per_step", "time"})
      if (run.run.contains(k)) h << "<tr><th>" << k << "</th><td>" << escape(text_of(run.run[k])) << "</td></tr>\n";
    h << "</table>\n";
  } else {
    h << "<p>This file has no start record (written before tierzero recorded a run's settings).</p>\n";
  }
  for (const Plot& p : plots) {
    const std::string png = read_small_file(dir + "/" + p.file, "plot " + p.file, std::uint64_t(64) << 20);
    h << "<h2>" << escape(p.title) << "</h2>\n<img alt=\"" << escape(p.title) << "\" src=\"data:image/png;base64,"
      << base64(png) << "\">\n";
  }
  h << "</body></html>\n";
  return h.str();
}

}  // namespace tz

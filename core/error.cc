// The process's log context and the error/log formatting behind the check macros.
#include "core/error.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace tz {
namespace {
LogContext g_context;  // written once at start-up, then read-only
std::once_flag g_context_once;
}  // namespace

void set_log_context(LogContext ctx) {
  std::call_once(g_context_once, [&] { g_context = std::move(ctx); });
}

const LogContext& log_context() { return g_context; }

static std::string prefix() {
  const LogContext& c = log_context();
  std::ostringstream os;
  os << "[rank " << c.rank;
  if (!c.host.empty()) os << " host " << c.host;
  os << " device " << c.device << "]";
  return os.str();
}

void throw_error(const char* kind, const char* stmt, const char* func, const char* file, int line,
                 const std::string& detail) {
  std::ostringstream os;
  os << prefix() << " " << kind;
  if (stmt && *stmt) os << " [" << stmt << "]";
  os << " in " << func << " at " << file << ":" << line;
  if (detail.empty())
    throw Error("an internal check of tierzero failed: this is a bug, not a problem with your input or settings; "
                "please report it with the debug line below",
                os.str(), true);
  throw Error(detail, os.str(), false);
}

namespace {
std::atomic<int> g_debug{-1};  // -1: not set, read TZ_DEBUG
}  // namespace

void set_debug_errors(bool on) { g_debug = on ? 1 : 0; }

bool debug_errors() {
  if (g_debug < 0) {
    const char* v = std::getenv("TZ_DEBUG");
    g_debug = v && *v && std::string(v) != "0" ? 1 : 0;
  }
  return g_debug > 0;
}

std::string error_report(const std::exception& e) {
  const LogContext& c = log_context();
  std::string who;
  if (c.world > 1) who = "rank " + std::to_string(c.rank) + (c.host.empty() ? "" : " (host " + c.host + ")") + ": ";
  std::string out = "tierzero: error: " + who + e.what() + "\n";
  const auto* te = dynamic_cast<const Error*>(&e);
  if (te && !te->debug().empty() && (te->internal() || debug_errors())) out += "tierzero: debug: " + te->debug() + "\n";
  return out;
}

void log_line(const std::string& msg) {
  std::string s = prefix() + " " + msg + "\n";
  std::fwrite(s.data(), 1, s.size(), stderr);
}

}  // namespace tz

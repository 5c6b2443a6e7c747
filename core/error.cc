// The process's log context and the error/log formatting behind the check macros.
#include "core/error.h"

#include <atomic>
#include <cstdio>
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
  if (!detail.empty()) os << ": " << detail;
  if (stmt && *stmt) os << " [" << stmt << "]";
  os << " in " << func << " at " << file << ":" << line;
  throw Error(os.str());
}

void log_line(const std::string& msg) {
  std::string s = prefix() + " " + msg + "\n";
  std::fwrite(s.data(), 1, s.size(), stderr);
}

}  // namespace tz

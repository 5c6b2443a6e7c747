// tz::Error and the check-macro family. A failed check throws an Error whose what() is the text for
// people (WHAT: WHY; WHAT TO DO, naming the file, field, flag or rank) and whose debug() is the text for
// developers: the check's kind, statement, function and file:line, with the rank, host and device.
// launch/ prints what() as "tierzero: error: ..." and debug() only with --debug or TZ_DEBUG=1, or for an
// internal error: a check with no message, an invariant of tierzero's own (a bug, not the input).
#pragma once

#include <cerrno>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>

namespace tz {

// Read-only after start-up: launch/ sets it once so errors and logs can name the rank.
struct LogContext {
  int rank = 0;
  int world = 1;
  std::string host;
  std::string device = "cpu";
};

// Sets the context; only the first call has effect, later calls are ignored (it never changes).
void set_log_context(LogContext ctx);
const LogContext& log_context();

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what, std::string debug = "", bool internal = false)
      : std::runtime_error(what), debug_(std::move(debug)), internal_(internal) {}
  // "[rank R host H device D] KIND [statement] in FUNCTION at FILE:LINE" ("" for an Error made directly).
  const std::string& debug() const { return debug_; }
  // A check without a message failed: tierzero's own invariant, so a bug to report.
  bool internal() const { return internal_; }

 private:
  std::string debug_;
  bool internal_ = false;
};

// Throws an Error: what() = detail (for a check without one, a sentence saying an internal check failed),
// debug() = "[rank R host H device D] kind [stmt] in func at file:line".
[[noreturn]] void throw_error(const char* kind, const char* stmt, const char* func, const char* file, int line,
                              const std::string& detail);

// Whether an error's debug() is printed too (--debug, TZ_DEBUG=1): launch/ sets it once.
void set_debug_errors(bool on);
bool debug_errors();

// What a command prints for an exception that ended it, one or two lines, each ending in a newline:
// "tierzero: error: [rank R (host H): ]WHAT", then "tierzero: debug: DEBUG" with --debug or TZ_DEBUG=1,
// or for an internal error always (with a request to report it).
std::string error_report(const std::exception& e);

// Writes a line prefixed by the rank to stderr.
void log_line(const std::string& msg);

namespace detail {
template <typename... Args>
std::string concat(Args&&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

}  // namespace tz

// The one generator macro; each family member supplies how to test its status and describe it.
#define TZ_CHECK_GEN(kind, ok_expr, stmt_text, ...)                                                  \
  do {                                                                                               \
    if (!(ok_expr)) ::tz::throw_error(kind, stmt_text, __func__, __FILE__, __LINE__,                 \
                                      ::tz::detail::concat(__VA_ARGS__));                            \
  } while (0)

// TZ_CHECK(cond, message parts...): a failed precondition or invariant.
#define TZ_CHECK(cond, ...) TZ_CHECK_GEN("check failed", (cond), #cond, "" __VA_OPT__(, ) __VA_ARGS__)

// TZ_FAIL(message parts...): an unconditional error.
#define TZ_FAIL(...) ::tz::throw_error("error", "", __func__, __FILE__, __LINE__, ::tz::detail::concat(__VA_ARGS__))

// TZ_SYS_CHECK(expr, ...): a POSIX call returning -1 and setting errno.
#define TZ_SYS_CHECK(expr, ...)                                                                      \
  do {                                                                                               \
    if ((expr) == -1) {                                                                              \
      int tz_errno_ = errno;                                                                         \
      ::tz::throw_error("system call failed", #expr, __func__, __FILE__, __LINE__,                   \
                        ::tz::detail::concat("" __VA_OPT__(, ) __VA_ARGS__, " (errno ", tz_errno_, \
                                             ": ", ::strerror(tz_errno_), ")"));                     \
    }                                                                                                \
  } while (0)

// TZ_MPI_CHECK(call): an MPI call that must return MPI_SUCCESS.
#define TZ_MPI_CHECK(call)                                                                           \
  do {                                                                                               \
    int tz_mpi_rc_ = (call);                                                                         \
    TZ_CHECK_GEN("MPI call failed", tz_mpi_rc_ == MPI_SUCCESS, #call, "MPI error code ", tz_mpi_rc_); \
  } while (0)

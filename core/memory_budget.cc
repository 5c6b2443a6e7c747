// MemoryBudget accounting and byte-size formatting/parsing.
#include "core/memory_budget.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/error.h"

namespace tz {

void Reservation::reset() noexcept {
  if (budget_) budget_->release(bytes_);
  budget_ = nullptr;
  bytes_ = 0;
}

Reservation MemoryBudget::reserve(std::size_t bytes, const std::string& what) {
  std::size_t cur = used_.load();
  for (;;) {
    if (bytes > budget_ || cur > budget_ - bytes) {
      TZ_FAIL("out of ", tier_, " memory budget: allocating ", format_bytes(bytes), " for ", what, " with ",
              format_bytes(cur), " already in use would exceed the ", tier_, " budget of ", format_bytes(budget_),
              " by ", format_bytes(cur + bytes - budget_),
              "; raise the budget (--", tier_, "-mem)",
              tier_ == "device" ? ", use a smaller model, micro-batch or sequence length, or offload states "
                                  "(--offload-optimizer, --offload-param, --offload-activations)"
                                : ", or offload less to this tier");
    }
    if (used_.compare_exchange_weak(cur, cur + bytes)) break;
  }
  std::size_t now = cur + bytes;
  std::size_t pk = peak_.load();
  while (now > pk && !peak_.compare_exchange_weak(pk, now)) {
  }
  return Reservation(this, bytes);
}

void MemoryBudget::release(std::size_t bytes) noexcept { used_.fetch_sub(bytes); }

std::string format_bytes(std::size_t bytes) {
  if (bytes == kUnlimited) return "unlimited";
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = double(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[64];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%zu B", bytes);
  else
    std::snprintf(buf, sizeof buf, "%.2f %s", v, units[u]);
  return buf;
}

std::size_t parse_bytes(const std::string& text) {
  if (text == "unlimited" || text == "none" || text == "0") return text == "0" ? 0 : kUnlimited;
  std::size_t i = 0, digits = 0, dots = 0;
  for (; i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'); ++i)
    ++(text[i] == '.' ? dots : digits);
  // At most one '.', so strtod reads the whole number; unlike std::stod it never throws (a huge
  // number becomes Inf and is refused below as too large).
  TZ_CHECK(digits > 0 && dots <= 1, "cannot read a byte size from '", text,
           "': expected a number with an optional unit (K, M, G, T)");
  double v = std::strtod(text.substr(0, i).c_str(), nullptr);
  std::string unit = text.substr(i);
  for (auto& c : unit) c = char(std::toupper(static_cast<unsigned char>(c)));
  double mult = 1;
  if (unit.empty() || unit == "B")
    mult = 1;
  else if (unit == "K" || unit == "KB" || unit == "KIB")
    mult = 1024.0;
  else if (unit == "M" || unit == "MB" || unit == "MIB")
    mult = 1024.0 * 1024;
  else if (unit == "G" || unit == "GB" || unit == "GIB")
    mult = 1024.0 * 1024 * 1024;
  else if (unit == "T" || unit == "TB" || unit == "TIB")
    mult = 1024.0 * 1024 * 1024 * 1024;
  else
    TZ_FAIL("unknown unit '", unit, "' in byte size '", text, "': use B, K, M, G or T (powers of 1024)");
  // 2^64 does not fit in size_t (llround would overflow past 2^63).
  const double bytes = std::nearbyint(v * mult);
  TZ_CHECK(bytes < 18446744073709551616.0, "byte size '", text, "' is too large");
  return std::size_t(bytes);
}

}  // namespace tz

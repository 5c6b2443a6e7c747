// Byte accounting for one memory tier under a budget: current use, peak, and the refusal message.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

namespace tz {

inline constexpr std::size_t kUnlimited = std::numeric_limits<std::size_t>::max();

class MemoryBudget;

// A grant of bytes from a budget, given back when it is destroyed (move-only, like Buffer<T>), so no
// reservation is ever released by hand or twice.
class Reservation {
 public:
  Reservation() = default;
  ~Reservation() { reset(); }
  Reservation(const Reservation&) = delete;
  Reservation& operator=(const Reservation&) = delete;
  Reservation(Reservation&& o) noexcept : budget_(o.budget_), bytes_(o.bytes_) { o.budget_ = nullptr, o.bytes_ = 0; }
  Reservation& operator=(Reservation&& o) noexcept {
    if (this != &o) {
      reset();
      budget_ = o.budget_, bytes_ = o.bytes_;
      o.budget_ = nullptr, o.bytes_ = 0;
    }
    return *this;
  }
  std::size_t bytes() const { return bytes_; }
  void reset() noexcept;

 private:
  friend class MemoryBudget;
  Reservation(MemoryBudget* b, std::size_t bytes) : budget_(b), bytes_(bytes) {}
  MemoryBudget* budget_ = nullptr;
  std::size_t bytes_ = 0;
};

class MemoryBudget {
 public:
  explicit MemoryBudget(std::string tier, std::size_t budget = kUnlimited) : tier_(std::move(tier)), budget_(budget) {}
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  // Reserves bytes or throws tz::Error naming the tier, the budget, the request and the current use;
  // the bytes return to the budget when the reservation is destroyed.
  [[nodiscard]] Reservation reserve(std::size_t bytes, const std::string& what);

  std::size_t used() const { return used_.load(); }
  std::size_t peak() const { return peak_.load(); }
  std::size_t budget() const { return budget_; }
  const std::string& tier() const { return tier_; }
  void reset_peak() { peak_.store(used_.load()); }

 private:
  friend class Reservation;
  void release(std::size_t bytes) noexcept;

  std::string tier_;
  std::size_t budget_;
  std::atomic<std::size_t> used_{0};
  std::atomic<std::size_t> peak_{0};
};

// "1.50 GiB", "512 B": human-readable byte counts for messages and tables.
std::string format_bytes(std::size_t bytes);

// Parses "512M", "2GiB", "1.5G", "unlimited", "123" (bytes); throws tz::Error naming the text.
std::size_t parse_bytes(const std::string& text);

}  // namespace tz

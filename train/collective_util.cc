// on_every_rank and all_gather_strings over the communicator's host-memory collectives.
#include "train/collective_util.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>

#include "core/error.h"

namespace tz {

void on_every_rank(Communicator& comm, const std::string& what, const std::function<void()>& fn) {
  std::exception_ptr err;
  try {
    fn();
  } catch (...) {
    err = std::current_exception();
  }
  if (comm.size() == 1) {
    if (err) std::rethrow_exception(err);
    return;
  }
  // The lowest failing rank r as the maximum over ranks of size - r (0: none failed).
  double flag = err ? double(comm.size() - comm.rank()) : 0.0;
  comm.all_reduce(&flag, 1, DType::f64, ReduceOp::max)->wait();
  if (err) std::rethrow_exception(err);
  if (flag > 0)
    TZ_FAIL("rank ", comm.size() - int(flag), " failed to ", what, " (its error is printed by that rank); stopping");
}

std::vector<std::string> all_gather_strings(Communicator& comm, const std::string& mine) {
  const int n = comm.size();
  if (n == 1) return {mine};
  std::vector<double> lens(n);
  double len = double(mine.size());
  comm.all_gather(&len, lens.data(), 1, DType::f64)->wait();
  std::size_t most = 0;
  for (double l : lens) most = std::max(most, std::size_t(l));
  const std::size_t slot = std::max<std::size_t>(1, (most + 1) / 2);  // in 2-byte elements
  std::vector<std::uint16_t> send(slot, 0), all(slot * n);
  std::memcpy(send.data(), mine.data(), mine.size());
  comm.all_gather(send.data(), all.data(), slot, DType::u16)->wait();
  std::vector<std::string> out;
  for (int r = 0; r < n; ++r)
    out.emplace_back(reinterpret_cast<const char*>(all.data() + r * slot), std::size_t(lens[r]));
  return out;
}

}  // namespace tz

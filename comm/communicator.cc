// Backend-independent parts of the Communicator interface: the names collectives go by in messages
// and metrics, thread-safe statistics, and the in-place conventions every backend checks the same way.
#include "comm/communicator.h"

#include <exception>

#include "core/error.h"

namespace tz {
namespace {

bool overlap(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes) {
  auto x = reinterpret_cast<std::uintptr_t>(a), y = reinterpret_cast<std::uintptr_t>(b);
  return a_bytes && b_bytes && x < y + b_bytes && y < x + a_bytes;
}

}  // namespace

CollectiveGroup::~CollectiveGroup() {
  if (!open_) return;
  const bool unwinding = std::uncaught_exceptions() > 0;
  try {
    comm_.group_end();
  } catch (const std::exception& e) {
    // While unwinding, the exception in flight is the first error; otherwise end() was not called.
    if (!unwinding) log_line(std::string("a collective group ended by its destructor failed: ") + e.what());
  }
}

std::string collective_name(Collective c) {
  switch (c) {
    case Collective::reduce_scatter:
      return "reduce_scatter";
    case Collective::all_gather:
      return "all_gather";
    case Collective::all_reduce:
      return "all_reduce";
    case Collective::broadcast:
      return "broadcast";
    case Collective::barrier:
      return "barrier";
  }
  return "collective " + std::to_string(int(c));
}

double bus_elements_sent(Collective kind, std::size_t count, int rank, int size, int root) {
  switch (kind) {
    case Collective::reduce_scatter:
    case Collective::all_gather:
      return double(size - 1) * double(count);  // (N-1)/N of the whole message of N x count
    case Collective::all_reduce:
      return 2.0 * double(size - 1) * double(count) / double(size);
    case Collective::broadcast:
      // Only the root sends; in a world of one nothing is sent at all.
      return rank == root && size > 1 ? double(count) : 0.0;
    case Collective::barrier:
      return 0.0;
  }
  return 0.0;
}

void CommStatsAccumulator::add_call(Collective k, double elements_sent, double bytes_sent) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.calls[int(k)] += 1;
  stats_.elements_sent[int(k)] += elements_sent;
  stats_.bytes_sent[int(k)] += bytes_sent;
}

void CommStatsAccumulator::add_wait(Collective k, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.wait_seconds[int(k)] += seconds;
}

void CommStatsAccumulator::add_busy(Collective k, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.busy_seconds[int(k)] += seconds;
}

CommStats CommStatsAccumulator::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void CommStatsAccumulator::reset() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_ = CommStats{};
}

BufferUse reduce_scatter_buffers(const void* send, const void* recv, std::size_t count, DType dtype, int rank,
                                 int size) {
  const std::size_t es = dtype_size(dtype);
  TZ_CHECK(count == 0 || (send && recv), "reduce_scatter needs send and recv buffers");
  if (count > 0 && recv == static_cast<const char*>(send) + std::size_t(rank) * count * es)
    return BufferUse::in_place;
  TZ_CHECK(!overlap(send, std::size_t(size) * count * es, recv, count * es),
           "reduce_scatter's recv buffer overlaps send without being this rank's slice of it (in place: recv "
           "== send + rank * count)");
  return BufferUse::separate;
}

BufferUse all_gather_buffers(const void* send, const void* recv, std::size_t count, DType dtype, int rank,
                             int size) {
  const std::size_t es = dtype_size(dtype);
  TZ_CHECK(count == 0 || (send && recv), "all_gather needs send and recv buffers");
  if (count > 0 && send == static_cast<const char*>(recv) + std::size_t(rank) * count * es)
    return BufferUse::in_place;
  TZ_CHECK(!overlap(send, count * es, recv, std::size_t(size) * count * es),
           "all_gather's send buffer overlaps recv without being this rank's slice of it (in place: send "
           "== recv + rank * count)");
  return BufferUse::separate;
}

}  // namespace tz

// NUMA nodes through libnuma (see numa.h).
#include "core/numa.h"

#include <numa.h>
#include <numaif.h>
#include <omp.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>

#include "core/error.h"
#include "core/memory_budget.h"

namespace tz {
namespace {

std::vector<int> node_cpus(int node) {
  std::vector<int> cpus;
  bitmask* m = numa_allocate_cpumask();
  if (numa_node_to_cpus(node, m) == 0)
    for (unsigned c = 0; c < m->size; ++c)
      if (numa_bitmask_isbitset(m, c)) cpus.push_back(int(c));
  numa_free_cpumask(m);
  return cpus;
}

std::string ids_text(const std::vector<NumaNode>& nodes) {
  std::string s;
  for (const NumaNode& n : nodes) s += (s.empty() ? "" : ", ") + std::to_string(n.id);
  return s;
}

}  // namespace

std::vector<NumaNode> numa_nodes(std::string* why) {
  std::vector<NumaNode> nodes;
  if (numa_available() < 0) {
    if (why) *why = "the kernel reports no NUMA support (numa_available() < 0)";
    return nodes;
  }
  for (int id = 0; id <= numa_max_node(); ++id) {
    if (!numa_bitmask_isbitset(numa_all_nodes_ptr, unsigned(id))) continue;  // no memory, or not ours
    long long free_bytes = 0;
    const long long total = numa_node_size64(id, &free_bytes);
    if (total <= 0) continue;
    NumaNode n;
    n.id = id;
    n.cpus = node_cpus(id);
    n.mem_total_bytes = std::size_t(total);
    n.mem_free_bytes = std::size_t(std::max(0LL, free_bytes));
    nodes.push_back(std::move(n));
  }
  for (NumaNode& n : nodes)
    for (const NumaNode& m : nodes) n.distances.push_back(numa_distance(n.id, m.id));
  return nodes;
}

NumaNode numa_node(int id, const std::string& what) {
  std::string why;
  const std::vector<NumaNode> nodes = numa_nodes(&why);
  TZ_CHECK(!nodes.empty(), what, ": no NUMA node can be used here: ", why);
  for (const NumaNode& n : nodes)
    if (n.id == id) return n;
  TZ_FAIL(what, ": NUMA node ", id, " has no memory this process may use; this machine's nodes with memory are ",
          ids_text(nodes), " (`tierzero doctor` lists them)");
}

std::vector<int> nearest_cpus(int node) {
  static std::mutex mu;
  static auto* known = new std::map<int, std::vector<int>>;  // never destroyed
  {
    std::lock_guard<std::mutex> lock(mu);
    if (const auto it = known->find(node); it != known->end()) return it->second;
  }
  const std::vector<NumaNode> nodes = numa_nodes();
  const auto self = std::find_if(nodes.begin(), nodes.end(), [&](const NumaNode& n) { return n.id == node; });
  if (self == nodes.end()) return {};
  if (!self->cpus.empty()) return self->cpus;
  int best = INT_MAX;
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if (!nodes[i].cpus.empty()) best = std::min(best, self->distances[i]);
  std::vector<int> cpus;
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if (!nodes[i].cpus.empty() && self->distances[i] == best)
      cpus.insert(cpus.end(), nodes[i].cpus.begin(), nodes[i].cpus.end());
  std::sort(cpus.begin(), cpus.end());
  std::lock_guard<std::mutex> lock(mu);
  known->emplace(node, cpus);
  return cpus;
}

OmpTeamOnCpus::OmpTeamOnCpus(const std::vector<int>& cpus) {
  cpu_set_t allowed, target;
  CPU_ZERO(&target);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
  int in = 0;
  for (int c : cpus)
    if (c >= 0 && c < CPU_SETSIZE && CPU_ISSET(c, &allowed)) CPU_SET(c, &target), ++in;
  if (in == 0 || in == CPU_COUNT(&allowed)) return;  // nothing to narrow
  const int team = omp_get_max_threads();
  saved_.assign(std::size_t(team), std::vector<unsigned char>(sizeof(cpu_set_t)));
#pragma omp parallel num_threads(team)
  {
    auto* mine = reinterpret_cast<cpu_set_t*>(saved_[std::size_t(omp_get_thread_num())].data());
    sched_getaffinity(0, sizeof(cpu_set_t), mine);
    sched_setaffinity(0, sizeof target, &target);
  }
}

OmpTeamOnCpus::~OmpTeamOnCpus() {
  if (saved_.empty()) return;
#pragma omp parallel num_threads(int(saved_.size()))
  sched_setaffinity(0, sizeof(cpu_set_t), reinterpret_cast<const cpu_set_t*>(saved_[std::size_t(omp_get_thread_num())].data()));
}

void bind_memory_to_node(void* p, std::size_t bytes, int node, const std::string& what) {
  TZ_CHECK(node >= 0 && node < int(sizeof(unsigned long) * CHAR_BIT) * 16, what, ": NUMA node ", node,
           " is out of range");
  std::vector<unsigned long> mask(std::size_t(node) / (sizeof(unsigned long) * CHAR_BIT) + 1, 0);
  mask[std::size_t(node) / (sizeof(unsigned long) * CHAR_BIT)] |= 1UL << (node % (sizeof(unsigned long) * CHAR_BIT));
  // MPOL_MF_STRICT | MPOL_MF_MOVE: pages already faulted in elsewhere are moved, or the call fails.
  if (mbind(p, bytes, MPOL_BIND, mask.data(), mask.size() * sizeof(unsigned long) * CHAR_BIT + 1,
            MPOL_MF_STRICT | MPOL_MF_MOVE) != 0) {
    const int err = errno;
    TZ_FAIL("cannot bind ", format_bytes(bytes), " for ", what, " to NUMA node ", node, ": mbind: ",
            std::strerror(err), err == EINVAL ? " (no such node with memory?)" : "");
  }
}

void* map_node_memory(std::size_t bytes, int node, const std::string& what) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    TZ_FAIL("cannot map ", format_bytes(bytes), " for ", what, " on NUMA node ", node, ": mmap: ", std::strerror(err));
  }
  try {
    bind_memory_to_node(p, bytes, node, what);
  } catch (...) {
    munmap(p, bytes);
    throw;
  }
  return p;
}

void unmap_node_memory(void* p, std::size_t bytes) noexcept { munmap(p, bytes); }

void NodeBlocks::add(const void* p, std::size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  blocks_[p] = bytes;
}

void NodeBlocks::remove(const void* p) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  blocks_.erase(p);
}

std::vector<std::pair<const void*, std::size_t>> NodeBlocks::list() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {blocks_.begin(), blocks_.end()};
}

std::map<int, std::size_t> page_nodes(const void* p, std::size_t bytes, std::size_t max_pages) {
  std::map<int, std::size_t> out;
  const std::size_t page = std::size_t(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<std::uintptr_t>(p) / page * page;
  const std::size_t pages = (reinterpret_cast<std::uintptr_t>(p) + bytes - begin + page - 1) / page;
  if (pages == 0 || max_pages == 0) return out;
  const std::size_t n = std::min(pages, max_pages);
  std::vector<void*> addrs(n);
  for (std::size_t i = 0; i < n; ++i) addrs[i] = reinterpret_cast<void*>(begin + (i * pages / n) * page);
  std::vector<int> status(n, 0);
  // nodes == nullptr: query only; status[i] is the page's node, or -errno (-ENOENT: not faulted in).
  if (move_pages(0, static_cast<unsigned long>(n), addrs.data(), nullptr, status.data(), 0) != 0) {
    const int err = errno;
    TZ_FAIL("cannot ask where ", n, " pages of ", format_bytes(bytes), " are: move_pages: ", std::strerror(err));
  }
  for (int s : status) ++out[s >= 0 ? s : -1];
  return out;
}

}  // namespace tz

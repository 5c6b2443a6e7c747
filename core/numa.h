// NUMA memory nodes through libnuma: what the machine has (nodes, their CPUs, memory and distances),
// binding a range of host memory to one node, and asking the kernel where a range's pages are
// (move_pages(2) in query mode). A CXL memory expander or a CPU-less node appears to Linux as one more
// node; a memory tier on it is a pinned host pool bound here (core/memory_kind.cc, zero/numa_tier.h).
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace tz {

struct NumaNode {
  int id = 0;
  std::vector<int> cpus;            // online CPUs of the node (empty: a memory-only node)
  std::size_t mem_total_bytes = 0;  // numa_node_size64
  std::size_t mem_free_bytes = 0;
  std::vector<int> distances;       // numa_distance to every node in `numa_nodes()` order (10: itself)
};

// The nodes with memory, by id. Empty, with `why` set, when the kernel has no NUMA support.
std::vector<NumaNode> numa_nodes(std::string* why = nullptr);

// The node with this id, or a tz::Error naming `what`, the node and the nodes this machine has.
NumaNode numa_node(int id, const std::string& what);

// The CPUs nearest to a node's memory: its own, or, for a memory-only node, those of the nodes at the
// least distance from it. Asked of the kernel once per node and kept.
std::vector<int> nearest_cpus(int node);

// While it lives, the calling thread and the OpenMP team's threads run on `cpus` (those of them the process
// may use); each thread gets its own mask back when it ends. Inactive (changes nothing) when `cpus` holds
// every CPU the calling thread may use, or none of them. The CPU Adam updates a numa:N tier's states under
// one of these, with the node's nearest_cpus.
class OmpTeamOnCpus {
 public:
  explicit OmpTeamOnCpus(const std::vector<int>& cpus);
  ~OmpTeamOnCpus();
  OmpTeamOnCpus(const OmpTeamOnCpus&) = delete;
  OmpTeamOnCpus& operator=(const OmpTeamOnCpus&) = delete;
  bool active() const { return !saved_.empty(); }

 private:
  std::vector<std::vector<unsigned char>> saved_;  // each team thread's cpu_set_t, by thread number
};

// Binds [p, p + bytes) (page-aligned, not yet touched) to `node` with MPOL_BIND: every page faulted in
// afterwards comes from that node or the fault fails. Throws naming `what` and the node.
void bind_memory_to_node(void* p, std::size_t bytes, int node, const std::string& what);

// Fresh page-aligned memory bound to `node` (mmap, then bind_memory_to_node before any page is touched);
// release with unmap_node_memory. Throws naming `what` when the mapping or the binding fails.
void* map_node_memory(std::size_t bytes, int node, const std::string& what);
void unmap_node_memory(void* p, std::size_t bytes) noexcept;

// The live blocks of a node-bound allocator, so that where their pages are can be checked.
class NodeBlocks {
 public:
  void add(const void* p, std::size_t bytes);
  void remove(const void* p) noexcept;
  std::vector<std::pair<const void*, std::size_t>> list() const;

 private:
  mutable std::mutex mu_;
  std::map<const void*, std::size_t> blocks_;
};

// Where a range's pages are, by move_pages(2) in query mode, over at most `max_pages` pages spread
// evenly across the range: node id -> pages; pages not yet faulted in count under -1.
std::map<int, std::size_t> page_nodes(const void* p, std::size_t bytes, std::size_t max_pages = 4096);

}  // namespace tz

// A memory tier on a NUMA node: `numa:N` for --offload-optimizer, --offload-param and DeepSpeed's
// offload "device". Each node used is registered once as a host tier of its own, over a pinned host pool
// bound to the node (core/numa.h), budgeted by --numa-mem N=SIZE. The CPU reaches its states in place as it
// reaches the host tier's, so training is bitwise the same as with --offload-optimizer cpu.
#pragma once

#include <cstddef>
#include <map>
#include <string>

#include "zero/tier.h"

namespace tz {
class Device;
struct MemoryPlan;
}  // namespace tz

namespace tz {

// The tier `numa:N`, registered (with its pool) on first use; before any device is made, since a device
// has allocators only for pools registered before it. Nothing here checks that the node exists: `plan`
// may plan another machine's nodes; check_numa_node does before training.
Tier numa_tier(int node);

// "numa:N" -> N; -1 when `name` is not of that form; throws naming `what` for "numa:" with a bad number.
int parse_numa_name(const std::string& name, const std::string& what);

// The tier's node, or -1 for a tier that is not a NUMA node's.
int tier_numa_node(Tier t);

// --numa-mem "N=SIZE[,M=SIZE]": node -> bytes (sizes as --host-mem: 16G, unlimited). Throws naming the
// flag and the piece.
std::map<int, std::size_t> parse_numa_mem(const std::string& text);

// Before the device is made: every numa:N tier the plan puts bytes on must be a node with memory this
// process may use, and with at least the plan's bytes free; throws naming the tier and the node.
void check_numa_tiers(const MemoryPlan& plan);

// After the buffers are allocated and written: asks the kernel (move_pages) where the pages of each
// numa:N tier's buffers are, over at most 4096 pages per tier; throws naming the tier when a page is on
// another node. Returns one line per tier ("numa:0: 1.38 MiB in 5 buffers, 24 of 24 pages checked on node
// 0 (move_pages)"); empty when the plan uses no such tier.
std::string check_numa_pages(Device& dev, const MemoryPlan& plan);

}  // namespace tz

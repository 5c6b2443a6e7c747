// The NUMA-node tiers (see numa_tier.h).
#include "zero/numa_tier.h"

#include <algorithm>
#include <mutex>

#include "core/allocator.h"
#include "core/device.h"
#include "core/error.h"
#include "core/memory_budget.h"
#include "core/numa.h"
#include "zero/memory_plan.h"

namespace tz {
namespace {

constexpr const char* kPrefix = "numa:";
constexpr int kMaxNode = 1023;

int parse_node(const std::string& digits, const std::string& what, const std::string& whole) {
  bool ok = !digits.empty() && digits.size() <= 4;
  for (char c : digits) ok = ok && c >= '0' && c <= '9';
  const int node = ok ? std::stoi(digits) : -1;
  TZ_CHECK(ok && node <= kMaxNode, what, " '", whole, "': a NUMA node is a whole number from 0 to ", kMaxNode,
           " (`tierzero doctor` lists this machine's nodes)");
  return node;
}

}  // namespace

Tier numa_tier(int node) {
  static std::mutex mu;  // one registration per node, whichever thread asks first
  std::lock_guard<std::mutex> lock(mu);
  for (Tier t : tiers())
    if (tier_traits(t).numa_node == node) return t;
  const std::string name = kPrefix + std::to_string(node);
  TierTraits tt;
  tt.name = name;
  tt.offload_names = {name};
  tt.medium = TierMedium::host;
  tt.memory = register_host_pool(name, node);
  tt.budget_flag = "--numa-mem " + std::to_string(node) + "=SIZE";
  tt.numa_node = node;
  return register_tier(std::move(tt));
}

int parse_numa_name(const std::string& name, const std::string& what) {
  if (name.rfind(kPrefix, 0) != 0) return -1;
  return parse_node(name.substr(std::string(kPrefix).size()), what, name);
}

int tier_numa_node(Tier t) { return tier_traits(t).numa_node; }

std::map<int, std::size_t> parse_numa_mem(const std::string& text) {
  std::map<int, std::size_t> out;
  std::size_t start = 0;
  while (start <= text.size() && !text.empty()) {
    const std::size_t comma = text.find(',', start);
    const std::string piece = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const std::size_t eq = piece.find('=');
    TZ_CHECK(eq != std::string::npos, "--numa-mem '", text, "': '", piece,
             "' is not NODE=SIZE (e.g. --numa-mem 1=64G,2=64G)");
    const int node = parse_node(piece.substr(0, eq), "--numa-mem", text);
    std::size_t bytes = 0;
    try {
      bytes = parse_bytes(piece.substr(eq + 1));
    } catch (const Error&) {
      TZ_FAIL("--numa-mem '", text, "': '", piece.substr(eq + 1), "' for node ", node,
              " is not a byte size: a number with an optional unit K, M, G or T (e.g. 64G), or unlimited");
    }
    TZ_CHECK(out.emplace(node, bytes).second, "--numa-mem '", text, "' gives node ", node, " twice");
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

void check_numa_tiers(const MemoryPlan& plan) {
  for (Tier t : tiers()) {
    const int node = tier_numa_node(t);
    if (node < 0 || plan.total(t) == 0) continue;
    const NumaNode n = numa_node(node, "the " + tier_name(t) + " tier (--offload-optimizer or --offload-param)");
    TZ_CHECK(plan.total(t) <= n.mem_free_bytes, "the memory plan needs ", format_bytes(plan.total(t)),
             " on the ", tier_name(t), " tier but NUMA node ", node, " has ", format_bytes(n.mem_free_bytes),
             " free of ", format_bytes(n.mem_total_bytes), ": offload less to it, or to another node");
  }
}

std::string check_numa_pages(Device& dev, const MemoryPlan& plan) {
  constexpr std::size_t kMaxPages = 4096;
  std::string out;
  for (Tier t : tiers()) {
    const int node = tier_numa_node(t);
    if (node < 0 || plan.total(t) == 0) continue;
    const auto blocks = dev.allocator(tier_memory(t)).node_blocks();
    std::size_t bytes = 0;
    for (const auto& b : blocks) bytes += b.second;
    std::map<int, std::size_t> where;
    for (const auto& [p, n] : blocks)
      for (const auto& [at, pages] : page_nodes(p, n, std::max<std::size_t>(1, kMaxPages * n / std::max<std::size_t>(bytes, 1))))
        where[at] += pages;
    std::size_t checked = 0, here = 0, absent = 0;
    std::string elsewhere;
    for (const auto& [at, pages] : where) {
      checked += pages;
      if (at == node) here += pages;
      else if (at < 0) absent += pages;
      else elsewhere += (elsewhere.empty() ? "" : ", ") + std::to_string(pages) + " on node " + std::to_string(at);
    }
    TZ_CHECK(elsewhere.empty(), "the ", tier_name(t), " tier's memory is bound to NUMA node ", node,
             " but move_pages finds ", elsewhere, " (of ", checked, " pages checked)");
    out += (out.empty() ? "" : "\n") + tier_name(t) + ": " + format_bytes(bytes) + " in " + std::to_string(blocks.size()) +
           " buffers, " + std::to_string(here) + " of " + std::to_string(checked) + " pages checked on node " +
           std::to_string(node) + (absent ? ", " + std::to_string(absent) + " not yet in memory" : "") +
           " (move_pages)";
  }
  return out;
}

}  // namespace tz

// missing_on_this_machine: NUMA nodes through core/numa.h, NVMe paths through stat(2).
#include "train/setting_checks.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <map>

#include "core/error.h"
#include "core/numa.h"
#include "zero/numa_tier.h"

namespace tz {
namespace {

// Every NUMA node the options name, with the setting that names it.
std::map<int, std::string> named_nodes(const OffloadOptions& o) {
  std::map<int, std::string> nodes;
  for (const auto& [t, flag] : {std::pair{o.optimizer, "--offload-optimizer"}, {o.param, "--offload-param"},
                                {o.activations, "--offload-activations"}})
    if (const int node = tier_numa_node(t); node >= 0)
      nodes.emplace(node, std::string(flag) + " numa:" + std::to_string(node) + ", or a config's offload device");
  for (int node : o.numa_budget_nodes) nodes.emplace(node, "--numa-mem " + std::to_string(node) + "=SIZE");
  return nodes;
}

}  // namespace

std::vector<std::string> missing_on_this_machine(const TrainOptions& opt) {
  std::vector<std::string> missing;
  std::string why, ids;
  const std::vector<NumaNode> here = numa_nodes(&why);
  for (const NumaNode& n : here) ids += (ids.empty() ? "" : ", ") + std::to_string(n.id);
  for (const auto& [node, setting] : named_nodes(opt.offload)) {
    bool found = false;
    for (const NumaNode& n : here) found = found || n.id == node;
    if (found) continue;
    missing.push_back("the numa:" + std::to_string(node) + " tier (" + setting + "): NUMA node " +
                      std::to_string(node) + " has no memory this process may use on this machine (" +
                      (here.empty() ? why : "its nodes with memory are " + ids) + "; `tierzero doctor` lists them)");
  }
  for (const std::string& path : opt.offload.nvme_paths) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      const int e = errno;
      missing.push_back("--nvme-path '" + path + "' does not exist on this machine (" + std::strerror(e) +
                        "): create the folder on the NVMe drive");
    } else if (!S_ISDIR(st.st_mode)) {
      missing.push_back("--nvme-path '" + path + "' is not a folder (the store is kept in a folder on the NVMe drive)");
    }
  }
  return missing;
}

}  // namespace tz

// Ownership of NVMe store folders across jobs: each store folder <path>/tierzero-<id>-r<rank>/ has a
// lock file beside it, <path>/tierzero-<id>-r<rank>.lock, created and flock'ed before the folder and
// held for the store's life. The kernel drops a flock when its process dies, however it dies (SIGKILL,
// the OOM killer), so a lock that can be taken marks a store whose owner is gone: the next store
// created on that path removes it, with a message. A held lock is a live job's store and is never
// touched, so two jobs sharing a path never collide.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "offload/file_descriptor.h"

namespace tz {

// Creates and locks <folder>.lock, writing the owner (host, pid) into it; the file appears under that
// name already locked (made under a temporary name, then linked), so a concurrent
// remove_stale_stores() never takes it for a leftover.
FileDescriptor lock_store_folder(const std::string& folder);

struct RemovedStore {
  std::string folder;
  std::uint64_t bytes = 0;
  std::string owner;  // what the lock file says
};

// Removes every store folder under `path` whose lock can be taken (its owner is gone), and its lock
// file; returns what it removed. Folders of live jobs, and anything not named like a store, are left.
std::vector<RemovedStore> remove_stale_stores(const std::string& path);

}  // namespace tz

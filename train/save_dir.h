// A --save-dir belongs to one run at a time. Rank 0 creates the folder and holds an exclusive flock on
// DIR/.tierzero.lock for the whole run (the kernel drops it however the process ends); the lock file
// names its holder (host, pid, SLURM_JOB_ID) and carries a nonce that every rank must read back, so a
// second job on the folder is refused at once naming the first, and a save-dir that each node sees on
// its own disk (where the other nodes' files would be lost) is refused naming the host. Checkpoints
// carry the run id of the run that wrote them: a fresh run draws one, a resumed run inherits it, and
// pruning removes only the step folders of this run id.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "model/checkpoint_tree.h"  // kSaveDirLock

namespace tz {

class SaveDirLease {
 public:
  // Collective. Throws on every rank naming the folder and the reason: not a folder, cannot be created,
  // held by another job (named), or not the same folder on every rank (the first host that differs).
  // `job`: the launcher's job id for the record (SLURM_JOB_ID; "" outside Slurm).
  SaveDirLease(const std::string& dir, Communicator& comm, const std::string& job);
  ~SaveDirLease();
  SaveDirLease(const SaveDirLease&) = delete;
  SaveDirLease& operator=(const SaveDirLease&) = delete;

 private:
  int fd_ = -1;  // rank 0's locked file
};

// A fresh run id: 16 hex digits from the kernel's random source.
std::string new_run_id();

// The step-NNNNNNNN folders in dir, newest first (none when dir does not exist).
std::vector<std::string> step_folders(const std::string& dir);

}  // namespace tz

// Finding checkpoint trees: the markers of one folder, and the walk up from an output path.
#include "model/checkpoint_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "core/error.h"

namespace tz {
namespace {

namespace fs = std::filesystem;

bool is_regular(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool exists_no_follow(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// A `latest` pointer: a regular file of at most 4 KiB whose first line is a step folder's name. Read
// without blocking (O_NONBLOCK: a FIFO named latest is not waited on; it is no pointer).
bool is_pointer(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  char text[32] = {};
  const bool small = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= 4096;
  const ssize_t n = small ? ::pread(fd, text, 14, 0) : -1;
  ::close(fd);
  if (n < 13) return false;
  return is_checkpoint_name(std::string(text, 13)) && (n == 13 || text[13] == '\n' || text[13] == '\r');
}

// A step-NNNNNNNN or .tmp-step-NNNNNNNN folder in `dir`, by one pass over its entries.
std::string step_folder_in(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return "";
  std::string found;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    const bool tmp = name.rfind(".tmp-", 0) == 0 && is_checkpoint_name(name.substr(5));
    if (!tmp && !is_checkpoint_name(name)) continue;
    struct stat st {};
    if (::stat((dir + "/" + name).c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      found = name;
      break;
    }
  }
  ::closedir(d);
  return found;
}

// The folders from `p` up to the root, `p` first.
void walk_up(fs::path p, std::optional<CheckpointTree>& outermost) {
  for (;; p = p.parent_path()) {
    const std::string marker = checkpoint_tree_marker(p.string());
    if (!marker.empty()) outermost = CheckpointTree{p.string(), marker};
    if (p == p.root_path() || !p.has_parent_path()) return;
  }
}

}  // namespace

std::string checkpoint_name(int step) {
  char b[32];
  std::snprintf(b, sizeof b, "step-%08d", step);
  return b;
}

bool is_checkpoint_name(const std::string& s) {
  return s.size() == 13 && s.rfind("step-", 0) == 0 && s.find_first_not_of("0123456789", 5) == std::string::npos;
}

std::string checkpoint_tree_marker(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return "";
  const std::string at = dir == "/" ? "/" : dir + "/";
  if (exists_no_follow(at + kSaveDirLock)) return std::string("the save-dir lock ") + kSaveDirLock;
  if (is_pointer(at + kCheckpointPointer)) return std::string("a checkpoint pointer '") + kCheckpointPointer + "'";
  if (is_regular(at + kCheckpointManifest) && is_regular(at + kFirstRankFile))
    return std::string("a checkpoint's ") + kCheckpointManifest + " and " + kFirstRankFile;
  const std::string step = step_folder_in(dir);
  return step.empty() ? "" : "the checkpoint folder " + step;
}

bool is_checkpoint_data_file(const std::string& path) {
  const fs::path p(path);
  const std::string name = p.filename().string();
  const bool named = name.size() == 14 && name.rfind("rank-", 0) == 0 && name.compare(10, 4, ".bin") == 0 &&
                     name.substr(5, 5).find_first_not_of("0123456789") == std::string::npos;
  return named && is_regular((p.has_parent_path() ? p.parent_path() : fs::path(".")).string() + "/" + kCheckpointManifest);
}

std::optional<CheckpointTree> checkpoint_tree_of(const std::string& path) {
  std::optional<CheckpointTree> outermost;
  if (path.empty()) return outermost;
  std::error_code ec;
  const fs::path given = fs::absolute(path, ec).lexically_normal();
  if (!ec) walk_up(given.has_filename() ? given : given.parent_path(), outermost);
  const fs::path resolved = fs::weakly_canonical(given, ec);
  std::optional<CheckpointTree> through_links;  // the tree the bytes would land in, named first
  if (!ec && resolved != given) walk_up(resolved, through_links);
  return through_links ? through_links : outermost;
}

void check_outside_checkpoint_trees(const std::string& path, const std::string& what) {
  const std::optional<CheckpointTree> tree = checkpoint_tree_of(path);
  if (!tree) return;
  const fs::path root(tree->root);
  const std::string beside = root.has_parent_path() ? root.parent_path().string() : "/";
  TZ_FAIL(what, " '", path, "' lies inside the checkpoint tree '", tree->root, "' (it holds ", tree->marker,
          "), which only the checkpoints written there may change: writing into it could replace a checkpoint's "
          "file or its pointer; write outside that folder, e.g. in '", beside, "'");
}

}  // namespace tz

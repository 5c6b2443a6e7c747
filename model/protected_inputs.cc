// The registry of protected inputs (a process-wide list under a mutex) and the output check.
#include "model/protected_inputs.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <filesystem>
#include <mutex>
#include <utility>
#include <vector>

#include "core/error.h"
#include "model/checkpoint_tree.h"

namespace tz {
namespace {

namespace fs = std::filesystem;

struct Entry {
  std::uint64_t id;
  std::string given, what, writer;
  fs::path canonical;  // absolute, symlinks resolved as far as the path exists
  bool exists = false, folder = false;
  dev_t dev = 0;
  ino_t ino = 0;
};

std::mutex g_mutex;
std::vector<Entry> g_inputs;
std::uint64_t g_next_id = 1;

fs::path canonical_of(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  return ec ? fs::absolute(path) : p;
}

bool same_node(const struct stat& st, const Entry& e) { return e.exists && st.st_dev == e.dev && st.st_ino == e.ino; }

// Whether e's path still names the node it named when it was protected. A protected folder the run
// itself removes (a resumed checkpoint that --keep-last prunes) frees its inode for reuse by a new
// file or folder, which must not be taken for the input: the node is compared only while it is there.
bool still_there(const Entry& e) {
  struct stat st {};
  return e.exists && ::stat(e.canonical.c_str(), &st) == 0 && same_node(st, e);
}

const char* kind_of(mode_t m) {
  return S_ISDIR(m) ? "a folder" : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device"
         : S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket" : S_ISREG(m) ? "a file" : "not a regular file";
}

// `path` is `e` itself, or lies inside it: by resolved name, or through a folder on the way up that is
// the same node as `e` (a bind mount, a second hard-linked name).
bool inside(const fs::path& out, const Entry& e, bool node_valid) {
  if (!e.folder && e.exists) return false;
  const std::string a = out.string(), b = e.canonical.string();
  if (a.size() > b.size() && a.compare(0, b.size(), b) == 0 && (b.back() == '/' || a[b.size()] == '/')) return true;
  if (!node_valid) return false;
  for (fs::path p = out.parent_path();; p = p.parent_path()) {
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0 && same_node(st, e)) return true;
    if (p == p.root_path() || p.empty()) return false;
  }
}

// `path` (`st`: its node, when it resolves) is not, and is not inside, a protected input.
void check_not_an_input(const std::string& path, const std::string& what, bool link, const struct stat* st) {
  const fs::path out = canonical_of(path);
  std::lock_guard<std::mutex> lock(g_mutex);
  for (const Entry& e : g_inputs) {
    const bool node_valid = still_there(e);
    const bool same = out == e.canonical || (st && node_valid && same_node(*st, e));
    if (same && e.writer == what && !link) continue;  // the one writer that replaces this input
    const char* how = !same ? "" : link ? " (it is a symlink to it)"
                      : st && st->st_nlink > 1 && out != e.canonical ? " (a hard link to it)" : "";
    TZ_CHECK(!same, what, " '", path, "' is ", e.what, " '", e.given, "'", how,
             ", which this command reads: writing it would destroy the input; choose another path");
    TZ_CHECK(!inside(out, e, node_valid), what, " '", path, "' is inside ", e.what, " '", e.given,
             "', which this command reads: writing there would change the input; choose a path outside it");
  }
}

// rename(2) cannot put a file or folder in the place of a mount point (EBUSY), nor replace an immutable
// or append-only file (EPERM): asked of the target itself (not followed through a symlink, which the
// rename replaces), so an empty read-only mount point is refused before anything is written beside it.
void check_replaceable(const std::string& path, const std::string& what) {
  struct statx sx {};
  if (::statx(AT_FDCWD, path.c_str(), AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &sx) != 0) return;  // nothing there
  auto has = [&](std::uint64_t attr) { return (sx.stx_attributes_mask & attr) && (sx.stx_attributes & attr); };
  TZ_CHECK(!has(STATX_ATTR_MOUNT_ROOT), what, " '", path, "' is a mount point: the output is written beside it and "
           "renamed into its place, which the kernel refuses for a mount point; give a path inside it (e.g. '",
           (std::filesystem::path(path) / "out").string(), "') or another one");
  TZ_CHECK(!has(STATX_ATTR_IMMUTABLE) && !has(STATX_ATTR_APPEND), what, " '", path, "' is ",
           has(STATX_ATTR_IMMUTABLE) ? "immutable" : "append-only", " (chattr), so it cannot be replaced; "
           "give another path, or clear the attribute with chattr");
}

}  // namespace

ProtectedInput::ProtectedInput(const std::string& path, std::string what, std::string writer) {
  if (path.empty()) return;
  Entry e{0, path, std::move(what), std::move(writer), canonical_of(path)};
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) e.exists = true, e.folder = S_ISDIR(st.st_mode), e.dev = st.st_dev, e.ino = st.st_ino;
  std::lock_guard<std::mutex> lock(g_mutex);
  e.id = id_ = g_next_id++;
  g_inputs.push_back(std::move(e));
}

ProtectedInput::~ProtectedInput() {
  if (!id_) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  std::erase_if(g_inputs, [&](const Entry& e) { return e.id == id_; });
}

ProtectedInput::ProtectedInput(ProtectedInput&& o) noexcept : id_(std::exchange(o.id_, 0)) {}

ProtectedInput& ProtectedInput::operator=(ProtectedInput&& o) noexcept {
  if (this != &o) {
    ProtectedInput gone(std::move(*this));
    id_ = std::exchange(o.id_, 0);
  }
  return *this;
}

void check_not_an_input(const std::string& path, const std::string& what) {
  struct stat lst {}, st {};
  const bool link = ::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode);
  check_not_an_input(path, what, link, ::stat(path.c_str(), &st) == 0 ? &st : nullptr);
}

void check_output_target(const std::string& path, const std::string& what, OutputKind kind, OutputWriter writer) {
  TZ_CHECK(!path.empty(), what, ": an empty path; give the path of a file to write");
  struct stat lst {}, st {};
  const bool present = ::lstat(path.c_str(), &lst) == 0;
  const bool link = present && S_ISLNK(lst.st_mode);
  const bool resolves = present && ::stat(path.c_str(), &st) == 0;  // false for a dangling symlink
  // The most specific refusal first: an input, then a checkpoint tree, then what is in the way.
  check_not_an_input(path, what, link, resolves ? &st : nullptr);
  if (writer == OutputWriter::any) check_outside_checkpoint_trees(path, what);
  if (resolves && kind == OutputKind::folder)
    TZ_CHECK(S_ISDIR(st.st_mode), what, " '", path, "' exists and is not a folder (it is ", kind_of(st.st_mode),
             "); give a folder to write into");
  else if (resolves)
    TZ_CHECK(S_ISREG(st.st_mode), what, " '", path, "' exists and is ", kind_of(st.st_mode),
             link ? " (through a symlink)" : "", ", not a regular file: writing it would replace it; give the path "
             "of a file to write");
  if (writer == OutputWriter::checkpoint && kind == OutputKind::folder) return;  // written into, not replaced
  check_replaceable(path, what);
}

}  // namespace tz

// check_planned_outputs: each target, then every pair, then a writability probe where each writer
// will create its files (an exclusive temporary file made and removed).
#include "model/output_set.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "model/checkpoint_tree.h"

namespace tz {
namespace {

namespace fs = std::filesystem;

// Absolute, symlinks resolved as far as the path exists, no trailing slash.
fs::path resolved(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  if (ec) p = fs::absolute(path).lexically_normal();
  if (!p.has_filename() && p.has_parent_path() && p != p.root_path()) p = p.parent_path();
  return p;
}

// `a` is `b` or lies inside it.
bool within(const fs::path& a, const fs::path& b) {
  auto [ai, bi] = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  return bi == b.end();
}

fs::path parent_of(const std::string& path) {
  const fs::path p = resolved(path);
  return p.has_parent_path() ? p.parent_path() : fs::path("/");
}

// The folder `path` names its entry in, as given (checkpoint_tree_of resolves its symlinks too).
std::string lexical_parent(const std::string& path) {
  fs::path p = fs::absolute(path).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();
  return p.has_parent_path() ? p.parent_path().string() : "/";
}

fs::path existing_ancestor(fs::path p) {
  std::error_code ec;
  while (!fs::is_directory(p, ec) && p.has_parent_path() && p != p.root_path()) p = p.parent_path();
  return p;
}

// An exclusive temporary file made in `dir` and removed: the writer will make its own there. `verb`:
// what cannot be done to the output when that fails ("written", or "created" for a folder to be made).
void probe(const PlannedOutput& o, const fs::path& dir, const char* verb = "written") {
  std::string name = (dir / ".tierzero-write-check.XXXXXX").string();
  const int fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    TZ_FAIL(o.flag, " '", o.path, "' cannot be ", verb, ": creating a file in '", dir.string(), "' failed (",
            std::strerror(e), "); create the folder or choose a writable one before the command runs, not after");
  }
  ::close(fd);
  ::unlink(name.c_str());
}

void check_one(const PlannedOutput& o) {
  std::error_code ec;
  switch (o.kind) {
    case PlannedKind::file:
      check_output_target(o.path, o.flag);
      probe(o, parent_of(o.path));
      return;
    case PlannedKind::folder:
      check_output_target(o.path, o.flag, OutputKind::folder);
      if (fs::exists(o.path, ec))
        TZ_CHECK(fs::is_empty(o.path, ec) && !ec, o.flag, " '", o.path, "' is not empty: a model folder is written "
                 "into a new or empty folder, never over files; give another path or empty it");
      probe(o, existing_ancestor(parent_of(o.path)));
      return;
    case PlannedKind::checkpoints:
      // The save-dir is the checkpoint writer's own tree; it may not lie inside another one.
      check_output_target(o.path, o.flag, OutputKind::folder, OutputWriter::checkpoint);
      check_outside_checkpoint_trees(lexical_parent(o.path), o.flag);
      probe(o, existing_ancestor(resolved(o.path)), fs::exists(o.path, ec) ? "written" : "created");
      return;
  }
}

const char* why_apart(PlannedKind folder) {
  return folder == PlannedKind::checkpoints ? "which holds this run's checkpoints, and nothing else may be written there"
                                            : "a model folder is written whole, in a folder of its own";
}

void check_pair(const PlannedOutput& a, const PlannedOutput& b) {
  const fs::path pa = resolved(a.path), pb = resolved(b.path);
  std::error_code ec;
  TZ_CHECK(pa != pb && !fs::equivalent(pa, pb, ec), a.flag, " '", a.path, "' and ", b.flag, " '", b.path,
           "' name the same ", a.kind == PlannedKind::file ? "file" : "folder",
           ": one would replace the other; give each its own path");
  if (b.kind != PlannedKind::file)
    TZ_CHECK(!within(pa, pb), a.flag, " '", a.path, "' lies inside ", b.flag, " '", b.path, "', ", why_apart(b.kind),
             "; write it outside that folder");
  if (a.kind != PlannedKind::file)
    TZ_CHECK(!within(pb, pa), b.flag, " '", b.path, "' lies inside ", a.flag, " '", a.path, "', ", why_apart(a.kind),
             "; write it outside that folder");
}

}  // namespace

void check_planned_outputs(const std::vector<PlannedOutput>& outputs) {
  std::vector<const PlannedOutput*> given;
  for (const PlannedOutput& o : outputs)
    if (!o.path.empty()) given.push_back(&o);
  for (const PlannedOutput* o : given) check_not_an_input(o->path, o->flag);  // the most specific refusal first
  for (std::size_t i = 0; i < given.size(); ++i)
    for (std::size_t j = i + 1; j < given.size(); ++j) check_pair(*given[i], *given[j]);
  for (const PlannedOutput* o : given) check_one(*o);
}

}  // namespace tz

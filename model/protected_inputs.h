// The files and folders a command reads, registered while it runs, and the one check every output
// passes: AtomicOutputFile (model/file_io.h) makes it before it creates anything and again just before
// its rename, and commands make it for each output path before any work starts (model/output_set.h).
// An output may not be, or be inside, a protected input (by name, through a symlink, a hard link or a
// bind mount) or a checkpoint tree, and may not replace a folder, a device node, a FIFO, a socket or a
// mount point.
#pragma once

#include <cstdint>
#include <string>

namespace tz {

class ProtectedInput {
 public:
  ProtectedInput() = default;
  // Protects `path` (a file or a folder; one that does not exist yet is protected by name) until
  // destruction. `what` names it in refusals ("--data", "the checkpoint being resumed"). `writer`: the
  // one kind of output (an AtomicOutputFile's `what`) that may still replace it, such as "checkpoint
  // pointer" for the `latest` a resumed run reads and then moves on; never a path inside it.
  ProtectedInput(const std::string& path, std::string what, std::string writer = "");
  ~ProtectedInput();
  ProtectedInput(ProtectedInput&& o) noexcept;
  ProtectedInput& operator=(ProtectedInput&& o) noexcept;
  ProtectedInput(const ProtectedInput&) = delete;
  ProtectedInput& operator=(const ProtectedInput&) = delete;

 private:
  std::uint64_t id_ = 0;  // 0: nothing registered
};

// What an output path names: a file to be replaced by rename, or a folder to write files into.
enum class OutputKind { file, folder };

// Who writes an output: any command (never inside a checkpoint tree, model/checkpoint_tree.h), or the
// checkpoint writer, which alone writes inside its save-dir.
enum class OutputWriter { any, checkpoint };

// Throws when an output `what` (a flag such as "--metrics", or a kind of file such as "safetensors
// file") at `path` would replace something that is not a regular file (for a folder: is something other
// than a folder), would write to or inside a protected input, lies in a checkpoint tree (unless the
// checkpoint writer writes it), or names something rename(2) cannot replace (a mount point, an immutable
// or append-only file); the message names the output, the path, and what is in the way.
void check_output_target(const std::string& path, const std::string& what, OutputKind kind = OutputKind::file,
                         OutputWriter writer = OutputWriter::any);

// The first of those checks alone: `path` is not, and is not inside, a protected input.
void check_not_an_input(const std::string& path, const std::string& what);

}  // namespace tz

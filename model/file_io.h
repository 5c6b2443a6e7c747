// RAII files for model data (safetensors, token files): reads at byte offsets, and writes under a
// temporary name renamed into place on commit, so a crash never leaves a truncated file behind.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "model/protected_inputs.h"

namespace tz {

// A read-only file. `what` ("safetensors file", "token file") names it in error messages.
class InputFile {
 public:
  InputFile(std::string path, std::string what);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  InputFile(InputFile&& o) noexcept;
  InputFile& operator=(InputFile&& o) noexcept;

  const std::string& path() const { return path_; }
  std::uint64_t size() const { return size_; }
  // Reads exactly `bytes` at `offset`; a short file or an I/O error throws naming the file.
  void read_at(void* dst, std::size_t bytes, std::uint64_t offset) const;

 private:
  std::string path_, what_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

// The whole of a small file (a config, a manifest, a hardware description): a regular file of at most
// `max_bytes` (a device, a FIFO or a folder is refused by InputFile before any read). `what` names it in
// errors; `hint` ends the too-large message (what the flag takes).
std::string read_small_file(const std::string& path, const std::string& what, std::uint64_t max_bytes,
                            const std::string& hint = "");

// Flushes a folder's entries to disk (after a rename into it); throws naming it.
void sync_folder(const std::string& dir);

// The one writer of every file a command writes. Writes a temporary file next to `path` (a unique name,
// created exclusively); commit() flushes it to disk, renames it to `path` and flushes the folder.
// Destroyed without commit (an exception on the way), it removes the temporary file and leaves `path`
// untouched. Before creating anything, and again just before the rename, it refuses a `path` that is,
// or is inside, a protected input or (unless `writer` is the checkpoint writer) a checkpoint tree, or
// that holds a folder, device, FIFO, socket or mount point (model/protected_inputs.h).
class AtomicOutputFile {
 public:
  AtomicOutputFile(std::string path, std::string what, OutputWriter writer = OutputWriter::any);
  ~AtomicOutputFile();
  AtomicOutputFile(const AtomicOutputFile&) = delete;
  AtomicOutputFile& operator=(const AtomicOutputFile&) = delete;

  void write(const void* src, std::size_t bytes);
  void commit();

 private:
  std::string path_, tmp_, what_;
  OutputWriter writer_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace tz

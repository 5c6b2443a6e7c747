// Reading and writing the data files of a training checkpoint: a writer appends sections (master, m,
// v of a global element range) to one rank's file with a streaming XXH3; a reader serves any element
// range of any group from whichever files hold it, and verifies checksums in bounded memory.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/progress.h"
#include "model/file_io.h"
#include "train/checkpoint_manifest.h"

namespace tz {

enum class StateArray { master = 0, m = 1, v = 2 };

class CheckpointReader {
 public:
  // Reads and validates <dir>/manifest.json; data files are opened on first use (their size checked).
  explicit CheckpointReader(std::string dir);
  ~CheckpointReader();

  const std::string& dir() const { return dir_; }
  const CheckpointManifest& manifest() const { return m_; }
  // Copies elements [begin, begin + n) of group g's array into out, in the global element indices of the
  // model's layout as this build lays it out (ParamLayout::build). A checkpoint written under another
  // alignment of the layout is read tensor by tensor from where its manifest puts them, the padding
  // between them as zeros.
  void read(int g, StateArray a, std::uint64_t begin, std::uint64_t n, float* out) const;
  // Whether some group is read tensor by tensor (written under another alignment of the layout).
  bool relaid() const;
  // Recomputes file i's XXH3-64 reading 4 MiB at a time; throws naming the file when it differs.
  void verify_file(std::size_t i, Progress* progress = nullptr) const;
  // Every file's checksum, with a progress line over all their bytes.
  void verify_files() const;

 private:
  struct Piece {
    std::uint64_t begin, count, offset;
    std::size_t file;
  };
  // A tensor at `to` in the layout and `from` in the files.
  struct Moved {
    std::uint64_t to, from, count;
  };
  const InputFile& file(std::size_t i) const;
  // read() in the files' own element indices.
  void read_stored(int g, StateArray a, std::uint64_t begin, std::uint64_t n, float* out) const;

  std::string dir_;
  CheckpointManifest m_;
  std::vector<std::vector<Piece>> pieces_;  // per group, sorted by begin
  std::vector<std::uint64_t> counts_;       // per group, the layout's elements
  std::vector<std::vector<Moved>> moved_;   // per group; empty where the files hold the layout as it is
  mutable std::vector<std::unique_ptr<InputFile>> files_;
};

// One rank's data file, written under a temporary name and renamed on finish().
class CheckpointFileWriter {
 public:
  CheckpointFileWriter(const std::string& dir, std::string name);
  ~CheckpointFileWriter();
  void append(int g, std::uint64_t begin, std::uint64_t n, const float* master, const float* m, const float* v);
  // Flushes to disk and renames into place; returns the file's manifest entry.
  CheckpointFile finish();

 private:
  void write(const void* p, std::size_t bytes);
  CheckpointFile entry_;
  AtomicOutputFile out_;
  void* hash_;  // XXH3_state_t
};

}  // namespace tz

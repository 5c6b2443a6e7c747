// The identity of a token file, by content: what the ranks compare at start-up (every rank must train
// on the same tokens) and what a checkpoint records so that a resume continues on the same data.
#pragma once

#include <cstdint>
#include <string>

namespace tz {

// The number of evenly spaced blocks data_identity hashes, and their size. The first block starts the
// file and the last one ends it; a file of at most kIdentityBlocks x kIdentityBlockBytes is hashed whole.
inline constexpr int kIdentityBlocks = 64;
inline constexpr std::uint64_t kIdentityBlockBytes = 64 << 10;

// "N bytes, sampled xxh3 H": the file's size and the XXH3-64 of its 64 blocks of 64 KiB, evenly spaced
// from the first byte to the last (4 MiB read at most); "default corpus" for the built-in one, "none"
// for no file. The same on every node that holds a copy of the same file, under any path.
std::string data_identity(const std::string& path);

// The identity checkpoints written before the sampled one recorded ("N bytes, xxh3 H": the XXH3-64 of
// the first and last MiB), so that they still resume.
std::string data_identity_first_last_mib(const std::string& path);

// The identity of `path` computed the way `recorded` (a checkpoint's) was: the first-and-last-MiB one for
// a recording in that format, else data_identity(path).
std::string data_identity_as_recorded(const std::string& recorded, const std::string& path);

}  // namespace tz

// Finding the checkpoint to read in a folder of checkpoints: what counts as intact, the `latest`
// pointer (latest_checkpoint in checkpoint.h), and the refusal that names a damaged checkpoint together
// with the newest intact one, so that no run silently trains from an older checkpoint.
#pragma once

#include <string>

namespace tz {

// A checkpoint folder is intact when its manifest validates (manifest_from_json) and every data file it
// lists is a regular file of the size the manifest gives. Checksums are not read here: the checkpoint a
// run resumes from, or `ckpt` reads, has every checksum verified anyway. Returns "" when `dir` is
// intact, else what is wrong with it.
std::string checkpoint_damage(const std::string& dir);

// The highest-numbered intact step-NNNNNNNN folder in `folder`, other than `except` ("" when none).
std::string newest_intact_checkpoint(const std::string& folder, const std::string& except = "");

// Throws: `what` (a checkpoint folder, or the pointer naming one) is damaged because of `reason`; nothing
// was deleted; names the newest intact checkpoint beside it (in `folder`, other than `except`) with
// `--resume DIR`, or says there is none.
[[noreturn]] void refuse_damaged_checkpoint(const std::string& what, const std::string& reason,
                                            const std::string& folder, const std::string& except);

// The same for a checkpoint folder that failed to open or verify: its siblings (when it is a
// step-NNNNNNNN folder) are searched for the newest intact one.
[[noreturn]] void refuse_damaged_checkpoint(const std::string& dir, const std::string& reason);

}  // namespace tz

// The structural check of a checkpoint manifest: what a reader must be able to trust about its files and
// sections before it computes a single offset from them (checkpoint_io.cc's reads rely on it).
#pragma once

#include <string>

#include "train/checkpoint_manifest.h"

namespace tz {

// Throws, naming `source` (the manifest), the field and what is wrong, unless:
//  - every data file name is a plain name inside the checkpoint folder ([A-Za-z0-9_.-], not starting
//    with '.', not manifest.json), given once;
//  - no group has more elements than its three fp32 arrays could take bytes in 64 bits, and all the
//    groups together fit in the bytes of all the files (checked before anything else is looked at);
//  - every section is of a listed group, inside it, inside its file, and the sections of a file do not
//    overlap and fill it exactly (a file's bytes are its sections' 3 x 4 x count);
//  - every element [0, count) of every group is in exactly one section across all files.
// O(n log n) in the number of sections; nothing it allocates depends on a count it reads.
void validate_manifest_layout(const CheckpointManifest& m, const std::string& source);

}  // namespace tz

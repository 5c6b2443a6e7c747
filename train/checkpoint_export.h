// `tierzero ckpt inspect` and `tierzero ckpt export`: a checkpoint's summary with every checksum
// verified, and its fp32 master weights as a Hugging Face GPT-2 safetensors file, streamed one tensor
// at a time (memory bounded by the largest tensor, not the model).
#pragma once

#include <cstdint>
#include <string>

#include "core/dtype.h"

namespace tz {

// A readable summary of the checkpoint at `dir` (a step folder, or a --save-dir folder: its latest),
// after verifying every file's checksum. Throws naming the file that fails.
std::string inspect_checkpoint(const std::string& dir);

// Writes the checkpoint's master weights to `out` in `dtype` (fp32, bf16, fp16), atomically; every
// file's checksum is verified first. Returns the checkpoint folder it read.
std::string export_checkpoint(const std::string& dir, const std::string& out, DType dtype);

// The same as a Hugging Face model folder `out` (model/hf_folder_writer.h), one tensor at a time:
// config.json from the model's shape, or copy_from's (a model folder of the same shape, whose tokenizer
// and generation files are copied too).
std::string export_checkpoint_hf(const std::string& dir, const std::string& out, DType dtype,
                                 std::uint64_t shard_bytes, const std::string& copy_from);

// A step folder itself, or the checkpoint latest_checkpoint chooses in a --save-dir folder.
std::string checkpoint_folder(const std::string& path);

}  // namespace tz

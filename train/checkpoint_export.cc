// Inspect and export: read-only uses of a checkpoint, outside any training run.
#include "train/checkpoint_export.h"

#include <filesystem>
#include <sstream>

#include "core/error.h"
#include "core/host_ops.h"
#include "model/param_layout.h"
#include "model/protected_inputs.h"
#include "model/safetensors_writer.h"
#include "train/checkpoint.h"
#include "train/checkpoint_io.h"

namespace tz {

std::string checkpoint_folder(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::exists(path + "/manifest.json", ec)) return path;
  TZ_CHECK(std::filesystem::is_directory(path, ec), "'", path, "' is not a checkpoint folder (no such folder)");
  std::string note;
  const std::string dir = latest_checkpoint(path, &note);
  TZ_CHECK(!dir.empty(), "'", path, "' is neither a checkpoint (no manifest.json) nor a folder holding a checkpoint");
  return dir;
}

std::string inspect_checkpoint(const std::string& path) {
  CheckpointReader r(checkpoint_folder(path));
  for (std::size_t f = 0; f < r.manifest().files.size(); ++f) r.verify_file(f);
  const CheckpointManifest& m = r.manifest();
  std::uint64_t elems = 0, bytes = 0;
  for (const auto& g : m.groups) elems += g.count;
  for (const auto& f : m.files) bytes += f.bytes;
  std::ostringstream os;
  os << "checkpoint " << r.dir() << "\n"
     << "  step " << m.step << " (" << m.engine.optimizer_steps << " optimizer updates applied)\n"
     << "  model: " << m.model.describe() << "; trained in " << m.dtype << "\n"
     << "  states: fp32 master, Adam m and v of " << elems << " elements in " << m.groups.size() << " groups\n"
     << "  written by " << m.world << " rank" << (m.world == 1 ? "" : "s") << " at ZeRO stage " << m.stage
     << ", optimizer on " << m.offload_optimizer << ", parameters on " << m.offload_param << "\n"
     << "  data: epoch " << m.data_epoch << ", next batch " << m.data_batch << " (global batches of "
     << m.global_batch_tokens << " tokens), " << m.data_identity << ", seed " << m.seed
     << (m.shuffle ? ", shuffled" : "") << "\n"
     << "  loss scale " << m.engine.scaler.scale << "; schedule " << m.schedule.dump() << "\n"
     << "  " << m.files.size() << " data file" << (m.files.size() == 1 ? "" : "s") << ", " << bytes
     << " bytes: every checksum verified";
  return os.str();
}

std::string export_checkpoint(const std::string& path, const std::string& out, DType dtype) {
  TZ_CHECK(dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16, "export as ", dtype_name(dtype),
           " is not supported; use fp32, bf16 or fp16");
  CheckpointReader r(checkpoint_folder(path));
  // The export may not write into the checkpoint it reads, nor replace a device or FIFO: refused before
  // any reading, and again by the writer before its rename.
  const ProtectedInput input(r.dir(), "the checkpoint being exported");
  check_output_target(out, "--to");
  for (std::size_t f = 0; f < r.manifest().files.size(); ++f) r.verify_file(f);
  const ParamLayout layout = ParamLayout::build(r.manifest().model);
  TZ_CHECK(layout.groups.size() == r.manifest().groups.size(), "checkpoint ", r.dir(), " has ",
           r.manifest().groups.size(), " groups; its model has ", layout.groups.size());
  std::vector<SafetensorsWriteTensor> tensors;
  const SafetensorsDType sd = to_safetensors_dtype(dtype);
  for (std::size_t g = 0; g < layout.groups.size(); ++g)
    for (const TensorSpec& t : layout.groups[g].tensors) {
      std::size_t n = 1;
      for (auto d : t.hf_shape) n *= std::size_t(d);
      // hf_shape drops wte's padded rows: a prefix of the stored tensor.
      tensors.push_back({t.hf_name, sd, t.hf_shape, nullptr, nullptr,
                         [&r, g, off = t.offset, n](float* dst) {
                           r.read(int(g), StateArray::master, off, n, dst);
                           TZ_CHECK(host_all_finite(dst, n), "checkpoint ", r.dir(), " holds non-finite weights in group ",
                                    r.manifest().groups[g].name, "; not exported");
                         }});
    }
  write_safetensors(out, std::move(tensors), {{"format", "pt"}});
  return r.dir();
}

}  // namespace tz

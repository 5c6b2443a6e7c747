// Inspect and export: read-only uses of a checkpoint, outside any training run.
#include "train/checkpoint_export.h"

#include <filesystem>
#include <sstream>

#include "core/error.h"
#include "core/host_ops.h"
#include "model/hf_folder.h"
#include "model/hf_folder_writer.h"
#include "model/model_family.h"
#include "model/output_set.h"
#include "model/param_layout.h"
#include "model/protected_inputs.h"
#include "model/safetensors_writer.h"
#include "train/checkpoint.h"
#include "train/checkpoint_io.h"

namespace tz {

std::string checkpoint_folder(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::exists(path + "/manifest.json", ec)) return path;
  TZ_CHECK(std::filesystem::is_directory(path, ec), "'", path, "' is not a checkpoint folder (no such folder); give a step folder of a --save-dir, such as SAVE_DIR/step-00000100");
  std::string note;
  const std::string dir = latest_checkpoint(path, &note);
  TZ_CHECK(!dir.empty(), "'", path, "' is neither a checkpoint (no manifest.json) nor a folder holding a checkpoint");
  return dir;
}

std::string inspect_checkpoint(const std::string& path) {
  CheckpointReader r(checkpoint_folder(path));
  r.verify_files();
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
  if (r.relaid())
    os << "\n  layout: written before tensors of 4096+ elements started on 256-element blocks; "
          "read tensor by tensor from the manifest's offsets";
  return os.str();
}

namespace {

// The checkpoint at `path`, with every file's checksum verified and its layout checked against its model.
struct VerifiedCheckpoint {
  CheckpointReader reader;
  ParamLayout layout;
  explicit VerifiedCheckpoint(const std::string& path) : reader(checkpoint_folder(path)) {
    reader.verify_files();
    layout = ParamLayout::build(reader.manifest().model);
    TZ_CHECK(layout.groups.size() == reader.manifest().groups.size(), "checkpoint ", reader.dir(), " has ",
             reader.manifest().groups.size(), " groups; its model has ", layout.groups.size());
  }
  // Tensor t of group g's master weights, hf_shape's count of them (wte's padded rows dropped: a prefix).
  void read(std::size_t g, const TensorSpec& t, std::size_t n, float* dst) const {
    reader.read(int(g), StateArray::master, t.offset, n, dst);
    TZ_CHECK(host_all_finite(dst, n), "checkpoint ", reader.dir(), " holds non-finite weights in group ",
             reader.manifest().groups[g].name, "; not exported");
  }
};

std::size_t hf_count(const TensorSpec& t) {
  std::size_t n = 1;
  for (auto d : t.hf_shape) n *= std::size_t(d);
  return n;
}

}  // namespace

std::string export_checkpoint(const std::string& path, const std::string& out, DType dtype) {
  TZ_CHECK(dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16, "export as ", dtype_name(dtype),
           " is not supported; use fp32, bf16 or fp16");
  // The export may not write into the checkpoint it reads, nor replace a device or FIFO: refused before
  // any reading, and again by the writer before its rename.
  const ProtectedInput input(checkpoint_folder(path), "the checkpoint being exported");
  check_planned_outputs({{"--to", out, PlannedKind::file}});
  const VerifiedCheckpoint ck(path);
  std::vector<SafetensorsWriteTensor> tensors;
  const SafetensorsDType sd = to_safetensors_dtype(dtype);
  for (std::size_t g = 0; g < ck.layout.groups.size(); ++g)
    for (const TensorSpec& t : ck.layout.groups[g].tensors)
      tensors.push_back({t.hf_name, sd, t.hf_shape, nullptr, nullptr,
                         [&ck, g, &t](float* dst) { ck.read(g, t, hf_count(t), dst); }});
  write_safetensors(out, std::move(tensors), {{"format", "pt"}});
  return ck.reader.dir();
}

std::string export_checkpoint_hf(const std::string& path, const std::string& out, DType dtype,
                                 std::uint64_t shard_bytes, const std::string& copy_from) {
  const ProtectedInput input(checkpoint_folder(path), "the checkpoint being exported");
  const ProtectedInput source(copy_from, "--copy-from");
  check_planned_outputs({{"--to", out, PlannedKind::folder}});
  check_hf_output_folder(out, "--to");
  const VerifiedCheckpoint ck(path);
  const ModelConfig& model = ck.reader.manifest().model;
  HfFolderOptions o;
  o.dtype = dtype, o.shard_bytes = shard_bytes, o.flag = "--to";
  if (!copy_from.empty()) {
    const ModelConfig theirs = read_hf_config(copy_from);
    TZ_CHECK(theirs == model, "--copy-from ", copy_from, " holds another model (", theirs.describe(),
             ") than checkpoint ", ck.reader.dir(), " (", model.describe(), ")");
    o.config = read_hf_config_json(copy_from);
    o.copy_from = copy_from;
  } else {
    o.config = model_family(model).hf_config(model);
  }
  HfFolderWriter w(out, ck.layout, std::move(o));
  std::vector<float> values;
  for (std::size_t g = 0; g < ck.layout.groups.size(); ++g)
    for (const TensorSpec& t : ck.layout.groups[g].tensors) {
      values.resize(hf_count(t));
      ck.read(g, t, values.size(), values.data());
      w.put_tensor(values.data());
    }
  w.commit();
  return ck.reader.dir();
}

}  // namespace tz

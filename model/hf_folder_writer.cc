// Writing Hugging Face model folders (see hf_folder_writer.h).
#include "model/hf_folder_writer.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/host_ops.h"
#include "model/file_io.h"
#include "model/protected_inputs.h"

namespace tz {
namespace {

namespace fs = std::filesystem;

constexpr std::uint64_t kMaxSideFileBytes = std::uint64_t(1) << 30;  // tokenizer.json is ~10-20 MB

std::string torch_dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "float32";
    case DType::bf16: return "bfloat16";
    case DType::f16: return "float16";
    default: TZ_FAIL("a Hugging Face folder holds fp32, bf16 or fp16 weights, not ", dtype_name(t));
  }
}

// `dir` without a trailing slash, so its parent and name are the folder's.
fs::path folder_path(const std::string& dir) {
  fs::path p = fs::path(dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p;
}

void write_text(const fs::path& path, const std::string& text, const std::string& what) {
  AtomicOutputFile out(path.string(), what);
  out.write(text.data(), text.size());
  out.commit();
}

}  // namespace

const std::vector<std::string>& hf_side_files() {
  static const std::vector<std::string> names = {
      "tokenizer.json",   "tokenizer_config.json", "tokenizer.model",     "special_tokens_map.json",
      "added_tokens.json", "vocab.json",           "merges.txt",          "generation_config.json",
      "chat_template.jinja", "chat_template.json"};
  return names;
}

HfShardPlan plan_hf_shards(const ParamLayout& layout, DType dtype, std::uint64_t shard_bytes) {
  TZ_CHECK(shard_bytes > 0, "the shard size must be positive");
  const SafetensorsDType sd = to_safetensors_dtype(dtype);
  HfShardPlan p;
  std::uint64_t in_shard = 0;
  std::size_t shards = 0;
  for (const GroupSpec& g : layout.groups)
    for (const TensorSpec& t : g.tensors) {
      const std::uint64_t b = safetensors_bytes({t.hf_name, sd, t.hf_shape});
      if (shards == 0 || (in_shard > 0 && in_shard + b > shard_bytes)) ++shards, in_shard = 0;
      in_shard += b;
      p.total_bytes += b;
      p.shard_of.push_back(shards - 1);
    }
  if (shards <= 1) {
    p.files = {"model.safetensors"};
    return p;
  }
  for (std::size_t k = 0; k < shards; ++k) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", k + 1, shards);
    p.files.push_back(name);
  }
  return p;
}

void check_hf_output_folder(const std::string& dir, const std::string& flag) {
  TZ_CHECK(!dir.empty(), flag, " needs a folder to write");
  check_output_target(dir, flag, OutputKind::folder);
  std::error_code ec;
  const fs::path p = folder_path(dir);
  if (fs::exists(p, ec))
    TZ_CHECK(fs::is_empty(p, ec) && !ec, flag, " '", dir, "' is not empty: a model folder is written into a new "
             "or empty folder, never over files; give another path or empty it");
}

HfFolderWriter::HfFolderWriter(std::string dir, ParamLayout layout, HfFolderOptions opt)
    : dir_(std::move(dir)), layout_(std::move(layout)), opt_(std::move(opt)) {
  check_hf_output_folder(dir_, opt_.flag);
  TZ_CHECK(opt_.config.is_object(), opt_.flag, ": the model's config.json must be a JSON object");
  opt_.config["torch_dtype"] = torch_dtype_name(opt_.dtype);
  if (opt_.config.contains("dtype")) opt_.config["dtype"] = torch_dtype_name(opt_.dtype);  // transformers >= 4.56
  plan_ = plan_hf_shards(layout_, opt_.dtype, opt_.shard_bytes);
  for (std::size_t g = 0; g < layout_.groups.size(); ++g)
    for (std::size_t i = 0; i < layout_.groups[g].tensors.size(); ++i) order_.emplace_back(int(g), i);
  // The source's side files must be readable files before anything is written (a FIFO or a folder named
  // tokenizer.json would otherwise fail the copy after the weights).
  std::error_code ec;
  for (const std::string& name : hf_side_files()) {
    const fs::path src = fs::path(opt_.copy_from) / name;
    if (opt_.copy_from.empty() || !fs::exists(src, ec)) continue;
    TZ_CHECK(fs::is_regular_file(src, ec), opt_.flag, ": '", src.string(), "' is not a regular file, so it cannot be "
             "copied beside the weights; remove it from the source folder or make it a file");
  }
  const fs::path p = folder_path(dir_);
  const fs::path parent = p.has_parent_path() ? p.parent_path() : fs::path(".");
  fs::create_directories(parent, ec);
  TZ_CHECK(!ec, opt_.flag, " '", dir_, "': cannot create the folder it goes in, '", parent.string(), "': ", ec.message());
  std::string hidden(1, '.');
  hidden.append(p.filename().string()).append(".tmp-").append(std::to_string(::getpid()));
  tmp_ = (parent / hidden).string();
  fs::remove_all(tmp_, ec);  // a crashed write by a process of the same id
  TZ_CHECK(fs::create_directory(tmp_, ec) && !ec, opt_.flag, " '", dir_, "': cannot create the temporary folder '",
           tmp_, "': ", ec ? ec.message() : "it exists", "; check that '", parent.string(), "' is writable");
  progress_ = std::make_unique<Progress>("writing " + dir_, plan_.total_bytes);
}

HfFolderWriter::~HfFolderWriter() {
  out_.reset();  // removes its temporary file
  if (committed_ || tmp_.empty()) return;
  std::error_code ec;
  fs::remove_all(tmp_, ec);
}

void HfFolderWriter::open_shard(std::size_t k) {
  const SafetensorsDType sd = to_safetensors_dtype(opt_.dtype);
  std::vector<SafetensorsDecl> decls;
  std::size_t i = 0;
  for (const GroupSpec& g : layout_.groups)
    for (const TensorSpec& t : g.tensors)
      if (plan_.shard_of[i++] == k) decls.push_back({t.hf_name, sd, t.hf_shape});
  out_ = std::make_unique<SafetensorsStream>((fs::path(tmp_) / plan_.files[k]).string(), std::move(decls),
                                             std::map<std::string, std::string>{{"format", "pt"}});
  shard_ = k;
}

void HfFolderWriter::put_group(int g, const float* values) {
  const int expected = next_tensor_ < order_.size() ? order_[next_tensor_].first : int(layout_.groups.size());
  TZ_CHECK(!committed_ && g == expected && (next_tensor_ == 0 || order_[next_tensor_ - 1].first != g), opt_.flag,
           ": group ", g, " given when group ", expected, " of ", layout_.groups.size(), " was expected");
  for (const TensorSpec& t : layout_.groups[g].tensors) put_tensor(values + t.offset);
}

void HfFolderWriter::put_tensor(const float* values) {
  TZ_CHECK(!committed_ && next_tensor_ < order_.size(), opt_.flag, ": more tensors given than the model's ",
           order_.size());
  const auto [g, i] = order_[next_tensor_];
  const TensorSpec& t = layout_.groups[g].tensors[i];
  if (!out_) open_shard(plan_.shard_of[next_tensor_]);
  const std::size_t n = out_->next().count();  // hf_shape: a prefix of the stored tensor (padded rows dropped)
  TZ_CHECK(host_all_finite(values, n), "the weights of ", layout_.groups[g].name, " (", t.hf_name,
           ") are not finite: ", dir_, " was not written");
  const std::uint64_t bytes = safetensors_bytes(out_->next());
  out_->put(values);
  progress_->advance(bytes);
  ++next_tensor_;
  if (out_->done()) {
    out_->commit();
    out_.reset();
  }
}

void HfFolderWriter::commit() {
  TZ_CHECK(!committed_ && next_tensor_ == order_.size() && !out_, opt_.flag, " '", dir_, "': committed after ",
           next_tensor_, " of its ", order_.size(), " tensors");
  const fs::path tmp(tmp_);
  if (plan_.files.size() > 1) {
    nlohmann::json map = nlohmann::json::object();
    std::size_t i = 0;
    for (const GroupSpec& g : layout_.groups)
      for (const TensorSpec& t : g.tensors) map[t.hf_name] = plan_.files[plan_.shard_of[i++]];
    const nlohmann::json index = {{"metadata", {{"total_size", plan_.total_bytes}}}, {"weight_map", map}};
    write_text(tmp / "model.safetensors.index.json", index.dump(2) + "\n", "safetensors index");
  }
  write_text(tmp / "config.json", opt_.config.dump(2) + "\n", "model config");
  std::error_code ec;
  for (const std::string& name : hf_side_files()) {
    const fs::path src = fs::path(opt_.copy_from) / name;
    if (opt_.copy_from.empty() || !fs::exists(src, ec)) continue;
    write_text(tmp / name, read_small_file(src.string(), name, kMaxSideFileBytes), name);
  }
  sync_folder(tmp_);
  // rename(2) replaces an empty folder and refuses one that has gained files since the check.
  const fs::path p = folder_path(dir_);
  check_output_target(dir_, opt_.flag, OutputKind::folder);
  if (::rename(tmp_.c_str(), p.c_str()) != 0) {
    const int e = errno;
    TZ_FAIL(opt_.flag, " '", dir_, "': moving the finished folder '", tmp_, "' into place failed: ", std::strerror(e),
            e == ENOTEMPTY || e == EEXIST ? " (the folder is no longer empty)" : "");
  }
  committed_ = true;
  sync_folder(p.has_parent_path() ? p.parent_path().string() : ".");
}

}  // namespace tz

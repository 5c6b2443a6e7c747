// Manifest <-> JSON, with the validation that lets a loader trust offsets and counts.
#include "train/checkpoint_manifest.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "core/adam_compressed.h"
#include "core/error.h"
#include "model/file_io.h"
#include "model/param_layout.h"
#include "train/checkpoint_validate.h"
#include "model/json_bounded.h"
#include "model/json_keys.h"

namespace tz {
namespace {

using json = nlohmann::json;

constexpr const char* kDamaged = "; the checkpoint is damaged: resume from another checkpoint";

// A value as an error shows it: at most 64 characters of its JSON.
std::string shown(const json& v) {
  std::string s = v.dump();
  return s.size() <= 64 ? s : s.substr(0, 61) + "...";
}

// Typed access to a required field; a missing, mistyped or out-of-range field names the manifest and
// the key (with its place: "files[1].sections[0].count").
class Fields {
 public:
  Fields(const json& j, std::string source, std::string where) : j_(j), src_(std::move(source)), where_(std::move(where)) {
    TZ_CHECK(j_.is_object(), src_, ": ", where_.empty() ? "the manifest" : "'" + where_ + "'",
             " is not a JSON object; the checkpoint is damaged or not a tierzero checkpoint: resume from another "
             "checkpoint");
  }
  const json& at(const char* key) const {
    auto it = j_.find(key);
    TZ_CHECK(it != j_.end(), src_, ": '", name(key),
             "' is missing; the checkpoint is damaged or from another version: resume from another checkpoint");
    return *it;
  }
  // A whole number in [0, 2^64): JSON's negative, fractional and larger numbers are refused, never rounded.
  std::uint64_t u64(const char* key) const {
    const json& v = at(key);
    TZ_CHECK(v.is_number_unsigned() || (v.is_number_integer() && v.get<long long>() >= 0), src_, ": '", name(key),
             "' must be a whole number from 0 to 2^64 - 1, got ", shown(v), kDamaged);
    return v.get<std::uint64_t>();
  }
  int i32(const char* key, int lo = 0, int hi = 0x7fffffff) const {
    const std::uint64_t x = u64(key);
    TZ_CHECK(x >= std::uint64_t(lo) && x <= std::uint64_t(hi), src_, ": '", name(key), "' is ", x,
             ", outside [", lo, ", ", hi, "]", kDamaged);
    return int(x);
  }
  // A finite number in [lo, hi].
  double real(const char* key, double lo, double hi) const {
    const json& v = at(key);
    TZ_CHECK(v.is_number() && v.get<double>() >= lo && v.get<double>() <= hi, src_, ": '", name(key),
             "' must be a number in [", lo, ", ", hi, "], got ", shown(v), kDamaged);
    return v.get<double>();
  }
  std::string str(const char* key) const {
    const json& v = at(key);
    TZ_CHECK(v.is_string() && v.get_ref<const std::string&>().size() <= 4096, src_, ": '", name(key),
             "' must be a string of at most 4096 bytes, got ", shown(v), kDamaged);
    return v.get<std::string>();
  }
  bool boolean(const char* key) const {
    const json& v = at(key);
    TZ_CHECK(v.is_boolean(), src_, ": '", name(key), "' must be true or false, got ", shown(v), kDamaged);
    return v.get<bool>();
  }
  const json& array(const char* key) const {
    const json& v = at(key);
    TZ_CHECK(v.is_array(), src_, ": '", name(key), "' must be an array, got ", shown(v), kDamaged);
    return v;
  }
  Fields sub(const char* key) const { return Fields(at(key), src_, name(key)); }
  std::string name(const char* key) const { return where_.empty() ? key : where_ + "." + key; }

 private:
  const json& j_;
  std::string src_, where_;
};

std::uint64_t parse_hex64(const std::string& s, const std::string& what) {
  TZ_CHECK(s.size() == 16 && s.find_first_not_of("0123456789abcdef") == std::string::npos, what,
           " is not a 16-digit hex checksum: '", s.substr(0, 64), "'", kDamaged);
  return std::strtoull(s.c_str(), nullptr, 16);
}

// The groups are the model's layout, name by name and tensor by tensor: each tensor where the manifest
// says, of the model's size, inside its group and after the one before it (a checkpoint written under
// another alignment of the layout is read tensor by tensor: CheckpointReader); a manifest that lists no
// tensors must have the model's group sizes. A reader may then take tensor offsets from the model (as the
// export does) and trust them inside the groups.
void model_matches_groups(const CheckpointManifest& m, const std::string& src) {
  // Every family has a group per layer and more: n_layer below the groups listed bounds the layout's size
  // before it is built.
  TZ_CHECK(std::size_t(m.model.n_layer) < m.groups.size(), src, ": 'groups' lists ", m.groups.size(),
           " groups, too few for a model of 'model.n_layer' ", m.model.n_layer, kDamaged);
  const ParamLayout layout = ParamLayout::build(m.model);
  TZ_CHECK(m.groups.size() == layout.groups.size(), src, ": 'groups' lists ", m.groups.size(),
           " groups, but a model of 'model.n_layer' ", m.model.n_layer, " has ", layout.groups.size(), kDamaged);
  for (std::size_t g = 0; g < m.groups.size(); ++g) {
    const CheckpointGroup& cg = m.groups[g];
    const GroupSpec& lg = layout.groups[g];
    TZ_CHECK(cg.name == lg.name && (!cg.stored.empty() || cg.count == lg.count), src, ": groups[", g, "] is ",
             cg.name, " of ", cg.count, " elements, but the model's is ", lg.name, " of ", lg.count,
             kDamaged);
    if (cg.stored.empty()) continue;
    TZ_CHECK(cg.stored.size() == lg.tensors.size(), src, ": groups[", g, "] (", cg.name, ") lists ",
             cg.stored.size(), " tensors, but the model's has ", lg.tensors.size(), kDamaged);
    std::uint64_t end = 0;
    for (std::size_t k = 0; k < cg.stored.size(); ++k) {
      const StoredTensor& t = cg.stored[k];
      TZ_CHECK(t.count == lg.tensors[k].count && t.offset >= end && t.offset <= cg.count &&
                   t.count <= cg.count - t.offset,
               src, ": groups[", g, "].tensors[", k, "] (", lg.tensors[k].name, ") holds ", t.count,
               " elements from offset ", t.offset, "; the model's tensor has ", lg.tensors[k].count,
               ", and it must lie after the one before it (", end, ") inside the group's ", cg.count,
               kDamaged);
      end = t.offset + t.count;
    }
  }
}

// Every key manifest_to_json writes (and checkpoints of earlier versions hold a subset of them).
const JsonKeySchema& manifest_keys() {
  static const JsonKeySchema keys = {
      {"",
       {"format", "version", "step", "run_id", "optimizer_steps", "computing", "loss_scaler", "data", "model", "dtype",
        "writer", "schedule", "groups", "files"}},
      {"loss_scaler", {"scale", "hysteresis_left", "clean_steps", "overflows_at_min"}},
      {"data", {"epoch", "batch", "global_batch_tokens", "identity", "seed", "shuffle"}},
      {"model",
       {"family", "n_layer", "n_head", "n_embd", "vocab_size", "padded_vocab_size", "max_seq_len", "n_kv_head",
        "head_dim", "ffn_dim", "norm_eps", "rope_theta", "rope_factor", "rope_low_freq_factor", "rope_high_freq_factor",
        "rope_original_max_seq_len", "tied_head", "qkv_bias", "o_bias", "mlp_bias", "sliding_window"}},
      {"writer", {"world", "stage", "offload_optimizer", "offload_param", "optimizer_states", "master_weights"}},
      {"schedule", {"lr", "min_lr", "warmup", "schedule", "steps"}},
      {"groups[]", {"name", "count", "dtype", "tensors"}},
      {"groups[].tensors[]", {"name", "shape", "offset"}},
      {"files[]", {"name", "bytes", "xxh3", "sections"}},
      {"files[].sections[]", {"group", "begin", "count", "offset"}}};
  return keys;
}

}  // namespace

std::string hex64(std::uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

json manifest_to_json(const CheckpointManifest& m) {
  json groups = json::array();
  for (const auto& g : m.groups)
    groups.push_back({{"name", g.name}, {"count", g.count}, {"dtype", "f32"}, {"tensors", g.tensors}});
  json files = json::array();
  for (const auto& f : m.files) {
    json secs = json::array();
    for (const auto& s : f.sections)
      secs.push_back({{"group", s.group}, {"begin", s.begin}, {"count", s.count}, {"offset", s.offset}});
    files.push_back({{"name", f.name}, {"bytes", f.bytes}, {"xxh3", hex64(f.xxh3)}, {"sections", secs}});
  }
  return {{"format", kCheckpointFormat},
          {"version", kCheckpointVersion},
          {"step", m.step},
          {"run_id", m.run_id},
          {"optimizer_steps", m.engine.optimizer_steps},
          {"computing", m.engine.computing},
          {"loss_scaler",
           {{"scale", m.engine.scaler.scale},
            {"hysteresis_left", m.engine.scaler.hysteresis_left},
            {"clean_steps", m.engine.scaler.clean_steps},
            {"overflows_at_min", m.engine.scaler.overflows_at_min}}},
          {"data",
           {{"epoch", m.data_epoch},
            {"batch", m.data_batch},
            {"global_batch_tokens", m.global_batch_tokens},
            {"identity", m.data_identity},
            {"seed", m.seed},
            {"shuffle", m.shuffle}}},
          {"model",
           {{"family", m.model.family},
            {"n_layer", m.model.n_layer},
            {"n_head", m.model.n_head},
            {"n_embd", m.model.n_embd},
            {"vocab_size", m.model.vocab_size},
            {"padded_vocab_size", m.model.padded_vocab_size},
            {"max_seq_len", m.model.max_seq_len},
            // What the Llama family reads (GPT-2 leaves them at their defaults).
            {"n_kv_head", m.model.n_kv_head},
            {"head_dim", m.model.head_dim},
            {"ffn_dim", m.model.ffn_dim},
            {"norm_eps", m.model.norm_eps},
            {"rope_theta", m.model.rope_theta},
            {"rope_factor", m.model.rope_factor},
            {"rope_low_freq_factor", m.model.rope_low_freq_factor},
            {"rope_high_freq_factor", m.model.rope_high_freq_factor},
            {"rope_original_max_seq_len", m.model.rope_original_max_seq_len},
            {"tied_head", m.model.tied_head},
            {"qkv_bias", m.model.qkv_bias},
            {"o_bias", m.model.o_bias},
            {"mlp_bias", m.model.mlp_bias},
            {"sliding_window", m.model.sliding_window}}},
          {"dtype", m.dtype},
          {"writer",
           {{"world", m.world},
            {"stage", m.stage},
            {"offload_optimizer", m.offload_optimizer},
            {"offload_param", m.offload_param},
            {"optimizer_states", m.optimizer_states},
            {"master_weights", m.master_weights}}},
          {"schedule", m.schedule},
          {"groups", groups},
          {"files", files}};
}

CheckpointManifest manifest_from_json(const json& j, const std::string& src) {
  Fields f(j, src, "");
  const std::string format = f.str("format");
  TZ_CHECK(format == kCheckpointFormat, src, ": 'format' is '", format.substr(0, 64), "', not '", kCheckpointFormat,
           "': not a tierzero checkpoint");
  const int version = f.i32("version");
  TZ_CHECK(version == kCheckpointVersion, src, ": checkpoint version ", version,
           " is not the version this tierzero reads (", kCheckpointVersion, ")");
  CheckpointManifest m;
  m.step = f.i32("step");
  if (j.contains("run_id")) m.run_id = f.str("run_id");  // absent in checkpoints written before run ids
  m.engine.optimizer_steps = f.i32("optimizer_steps");
  m.engine.computing = f.i32("computing", 1);
  Fields ls = f.sub("loss_scaler");
  m.engine.scaler.scale = float(ls.real("scale", std::numeric_limits<float>::min(), std::numeric_limits<float>::max()));
  m.engine.scaler.hysteresis_left = ls.i32("hysteresis_left");
  m.engine.scaler.clean_steps = ls.i32("clean_steps");
  m.engine.scaler.overflows_at_min = ls.i32("overflows_at_min");
  Fields d = f.sub("data");
  m.data_epoch = d.u64("epoch");
  m.data_batch = d.u64("batch");
  m.global_batch_tokens = d.u64("global_batch_tokens");
  // A resume maps the position through batch x tokens (resume_position): that product must fit.
  TZ_CHECK(m.global_batch_tokens >= 1 &&
               m.data_batch <= std::numeric_limits<std::uint64_t>::max() / m.global_batch_tokens,
           src, ": 'data.batch' ", m.data_batch, " x 'data.global_batch_tokens' ", m.global_batch_tokens,
           " is not a token count from 1 to 2^64 - 1", kDamaged);
  m.data_identity = d.str("identity");
  m.seed = d.u64("seed");
  m.shuffle = d.boolean("shuffle");
  // Bounded so that the layout's sizes (ParamLayout::build) cannot overflow; n_layer is bounded by the
  // groups the manifest lists (one per layer, and more: model_matches_groups).
  Fields mo = f.sub("model");
  if (j.at("model").contains("family")) m.model.family = mo.str("family");  // absent before families: gpt2
  m.model.n_layer = mo.i32("n_layer", 1);
  m.model.n_head = mo.i32("n_head", 1, 1 << 20);
  m.model.n_embd = mo.i32("n_embd", 1, 1 << 20);
  m.model.vocab_size = mo.i32("vocab_size", 2, 1 << 24);
  m.model.padded_vocab_size = mo.i32("padded_vocab_size", 2, 1 << 24);
  m.model.max_seq_len = mo.i32("max_seq_len", 1, 1 << 24);
  // Absent in checkpoints written before the Llama family: GPT-2's defaults.
  const json& mj = j.at("model");
  if (mj.contains("n_kv_head")) {
    m.model.n_kv_head = mo.i32("n_kv_head", 0, 1 << 20);
    m.model.head_dim = mo.i32("head_dim", 0, 1 << 20);
    m.model.ffn_dim = mo.i32("ffn_dim", 0, 1 << 24);
    m.model.norm_eps = mo.real("norm_eps", 0, 1);
    m.model.rope_theta = mo.real("rope_theta", 0, 1e300);
    m.model.rope_factor = mo.real("rope_factor", 0, 1e300);
    m.model.rope_low_freq_factor = mo.real("rope_low_freq_factor", 0, 1e300);
    m.model.rope_high_freq_factor = mo.real("rope_high_freq_factor", 0, 1e300);
    m.model.rope_original_max_seq_len = mo.i32("rope_original_max_seq_len", 0, 1 << 24);
    m.model.tied_head = mo.boolean("tied_head");
    m.model.qkv_bias = mo.boolean("qkv_bias");
    m.model.o_bias = mo.boolean("o_bias");
    m.model.mlp_bias = mo.boolean("mlp_bias");
    if (mj.contains("sliding_window")) m.model.sliding_window = mo.i32("sliding_window", 0, 1 << 24);
  }
  try {
    m.model.validate();
  } catch (const Error& e) {
    TZ_FAIL(src, ": 'model' is not a valid model shape (", e.what(), ")", kDamaged);
  }
  m.dtype = f.str("dtype");
  Fields w = f.sub("writer");
  m.world = w.i32("world", 1);
  m.stage = w.i32("stage", 0, 3);
  m.offload_optimizer = w.str("offload_optimizer");
  m.offload_param = w.str("offload_param");
  // Absent in checkpoints written before compressed states: fp32. Checked as names here, so that a damaged
  // value is refused as damage, not as another format.
  if (j.at("writer").contains("optimizer_states")) m.optimizer_states = w.str("optimizer_states");
  if (j.at("writer").contains("master_weights")) m.master_weights = w.str("master_weights");
  try {
    parse_moment_format(m.optimizer_states, "'writer.optimizer_states'");
    parse_master_format(m.master_weights, "'writer.master_weights'");
  } catch (const Error& e) {
    TZ_FAIL(src, ": ", e.what(), kDamaged);
  }
  m.schedule = f.at("schedule");
  const json& groups = f.array("groups");
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const std::string at = "groups[" + std::to_string(g) + "]";
    Fields gf(groups[g], src, at);
    CheckpointGroup cg;
    cg.name = gf.str("name"), cg.count = gf.u64("count");
    if (groups[g].contains("tensors")) {
      const json& ts = gf.array("tensors");
      for (std::size_t k = 0; k < ts.size(); ++k) {
        const std::string where = at + ".tensors[" + std::to_string(k) + "]";
        Fields tf(ts[k], src, where);
        StoredTensor t{tf.u64("offset"), 1};
        const json& shape = tf.array("shape");
        for (const json& d : shape) {
          // Each extent under 2^40 and the product under 2^62: no overflow, and far beyond any group.
          TZ_CHECK(d.is_number_unsigned() && d.get<std::uint64_t>() < (std::uint64_t(1) << 40) &&
                       (d.get<std::uint64_t>() == 0 ||
                        t.count <= (std::uint64_t(1) << 62) / d.get<std::uint64_t>()),
                   src, ": '", where, ".shape' must list whole numbers below 2^40, got ", shown(shape),
                   kDamaged);
          t.count *= d.get<std::uint64_t>();
        }
        cg.stored.push_back(t);
      }
    }
    m.groups.push_back(std::move(cg));
  }
  const json& files = f.array("files");
  TZ_CHECK(files.size() == std::size_t(m.world), src, ": 'files' lists ", files.size(),
           " data files, but 'writer.world' ", m.world, " ranks each wrote one", kDamaged);
  for (std::size_t i = 0; i < files.size(); ++i) {
    const std::string at = "files[" + std::to_string(i) + "]";
    Fields ff(files[i], src, at);
    CheckpointFile file;
    file.name = ff.str("name");
    file.bytes = ff.u64("bytes");
    file.xxh3 = parse_hex64(ff.str("xxh3"), src + ": '" + at + ".xxh3'");
    const json& secs = ff.array("sections");
    for (std::size_t k = 0; k < secs.size(); ++k) {
      Fields sf(secs[k], src, at + ".sections[" + std::to_string(k) + "]");
      file.sections.push_back({sf.i32("group"), sf.u64("begin"), sf.u64("count"), sf.u64("offset")});
    }
    m.files.push_back(std::move(file));
  }
  validate_manifest_layout(m, src);
  model_matches_groups(m, src);
  return m;
}

CheckpointManifest read_manifest(const std::string& dir) {
  const std::string path = dir + "/manifest.json";
  const std::string text = read_small_file(path, "checkpoint manifest", kMaxManifestBytes,
                                           "no tierzero checkpoint has one that large: resume from another checkpoint");
  // Every key known before any is parsed: one pass, memory bounded by the nesting (model/json_keys.h).
  check_json_keys(text, path, manifest_keys(), "a tierzero checkpoint manifest",
                  "the checkpoint is damaged: resume from another checkpoint");
  json j;
  try {
    j = parse_json_bounded(text, "the checkpoint manifest '" + path + "'",
                           "the checkpoint is damaged: resume from another one");
  } catch (const json::exception& e) {
    TZ_FAIL("the checkpoint manifest '", path, "' is not valid JSON (", e.what(),
            "); the checkpoint is damaged: resume from another one");
  }
  return manifest_from_json(j, path);
}

}  // namespace tz

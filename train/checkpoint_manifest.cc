// Manifest <-> JSON, with the validation that lets a loader trust offsets and counts.
#include "train/checkpoint_manifest.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "core/error.h"
#include "model/file_io.h"
#include "model/json_bounded.h"

namespace tz {
namespace {

using json = nlohmann::json;

// Typed access to a required field; a missing or mistyped field names the manifest and the key.
class Fields {
 public:
  Fields(const json& j, std::string source, std::string where) : j_(j), src_(std::move(source)), where_(std::move(where)) {
    TZ_CHECK(j_.is_object(), src_, ": ", where_.empty() ? "the manifest" : where_,
             " is not a JSON object; the checkpoint is damaged or not a tierzero checkpoint");
  }
  const json& at(const char* key) const {
    auto it = j_.find(key);
    TZ_CHECK(it != j_.end(), src_, ": '", name(key), "' is missing; the checkpoint is damaged or from another version");
    return *it;
  }
  std::uint64_t u64(const char* key) const {
    const json& v = at(key);
    TZ_CHECK(v.is_number_unsigned() || (v.is_number_integer() && v.get<long long>() >= 0), src_, ": '", name(key),
             "' must be a whole number >= 0, got ", v.dump());
    return v.get<std::uint64_t>();
  }
  int i32(const char* key, int lo = 0) const {
    std::uint64_t x = u64(key);
    TZ_CHECK(x <= 0x7fffffff && int(x) >= lo, src_, ": '", name(key), "' is out of range: ", x);
    return int(x);
  }
  double real(const char* key) const {
    const json& v = at(key);
    TZ_CHECK(v.is_number(), src_, ": '", name(key), "' must be a number, got ", v.dump());
    return v.get<double>();
  }
  std::string str(const char* key) const {
    const json& v = at(key);
    TZ_CHECK(v.is_string(), src_, ": '", name(key), "' must be a string, got ", v.dump());
    return v.get<std::string>();
  }
  bool boolean(const char* key) const {
    const json& v = at(key);
    TZ_CHECK(v.is_boolean(), src_, ": '", name(key), "' must be true or false, got ", v.dump());
    return v.get<bool>();
  }
  const json& array(const char* key) const {
    const json& v = at(key);
    TZ_CHECK(v.is_array(), src_, ": '", name(key), "' must be an array");
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
           " is not a 16-digit hex checksum: '", s, "'");
  return std::strtoull(s.c_str(), nullptr, 16);
}

}  // namespace

std::string hex64(std::uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

std::string checkpoint_name(int step) {
  char b[32];
  std::snprintf(b, sizeof b, "step-%08d", step);
  return b;
}

bool is_checkpoint_name(const std::string& s) {
  return s.size() == 13 && s.rfind("step-", 0) == 0 && s.find_first_not_of("0123456789", 5) == std::string::npos;
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
           {{"n_layer", m.model.n_layer},
            {"n_head", m.model.n_head},
            {"n_embd", m.model.n_embd},
            {"vocab_size", m.model.vocab_size},
            {"padded_vocab_size", m.model.padded_vocab_size},
            {"max_seq_len", m.model.max_seq_len}}},
          {"dtype", m.dtype},
          {"writer",
           {{"world", m.world},
            {"stage", m.stage},
            {"offload_optimizer", m.offload_optimizer},
            {"offload_param", m.offload_param}}},
          {"schedule", m.schedule},
          {"groups", groups},
          {"files", files}};
}

CheckpointManifest manifest_from_json(const json& j, const std::string& src) {
  Fields f(j, src, "");
  TZ_CHECK(f.str("format") == kCheckpointFormat, src, ": 'format' is '", f.str("format"), "', not '",
           kCheckpointFormat, "'");
  TZ_CHECK(f.i32("version") == kCheckpointVersion, src, ": checkpoint version ", f.i32("version"),
           " is not the version this tierzero reads (", kCheckpointVersion, ")");
  CheckpointManifest m;
  m.step = f.i32("step");
  m.engine.optimizer_steps = f.i32("optimizer_steps");
  m.engine.computing = f.i32("computing", 1);
  Fields ls = f.sub("loss_scaler");
  m.engine.scaler.scale = float(ls.real("scale"));
  m.engine.scaler.hysteresis_left = ls.i32("hysteresis_left");
  m.engine.scaler.clean_steps = ls.i32("clean_steps");
  m.engine.scaler.overflows_at_min = ls.i32("overflows_at_min");
  Fields d = f.sub("data");
  m.data_epoch = d.u64("epoch");
  m.data_batch = d.u64("batch");
  m.global_batch_tokens = d.u64("global_batch_tokens");
  m.data_identity = d.str("identity");
  m.seed = d.u64("seed");
  m.shuffle = d.boolean("shuffle");
  Fields mo = f.sub("model");
  m.model.n_layer = mo.i32("n_layer", 1);
  m.model.n_head = mo.i32("n_head", 1);
  m.model.n_embd = mo.i32("n_embd", 1);
  m.model.vocab_size = mo.i32("vocab_size", 2);
  m.model.padded_vocab_size = mo.i32("padded_vocab_size", 2);
  m.model.max_seq_len = mo.i32("max_seq_len", 1);
  m.model.validate();
  m.dtype = f.str("dtype");
  Fields w = f.sub("writer");
  m.world = w.i32("world", 1);
  m.stage = w.i32("stage");
  m.offload_optimizer = w.str("offload_optimizer");
  m.offload_param = w.str("offload_param");
  m.schedule = f.at("schedule");
  for (const json& g : f.array("groups")) {
    Fields gf(g, src, "groups[]");
    m.groups.push_back({gf.str("name"), gf.u64("count")});
  }
  TZ_CHECK(!m.groups.empty(), src, ": the manifest lists no parameter groups");
  // Every element of every group in exactly one section: sort the sections per group and walk them.
  std::vector<std::vector<std::pair<std::uint64_t, std::uint64_t>>> cover(m.groups.size());
  for (const json& fj : f.array("files")) {
    Fields ff(fj, src, "files[]");
    CheckpointFile file;
    file.name = ff.str("name");
    TZ_CHECK(!file.name.empty() && file.name.find('/') == std::string::npos && file.name[0] != '.', src,
             ": file name '", file.name, "' is not a plain name inside the checkpoint folder");
    file.bytes = ff.u64("bytes");
    file.xxh3 = parse_hex64(ff.str("xxh3"), src + ": " + file.name + "'s xxh3");
    for (const json& sj : ff.array("sections")) {
      Fields sf(sj, src, "files[" + file.name + "].sections[]");
      CheckpointSection s{sf.i32("group"), sf.u64("begin"), sf.u64("count"), sf.u64("offset")};
      TZ_CHECK(std::size_t(s.group) < m.groups.size(), src, ": ", file.name, " has a section of group ", s.group,
               ", but there are ", m.groups.size(), " groups");
      const std::uint64_t count = m.groups[s.group].count;
      TZ_CHECK(s.count > 0 && s.begin <= count && s.count <= count - s.begin, src, ": ", file.name,
               " has a section [", s.begin, ", +", s.count, ") outside group ", m.groups[s.group].name, " of ",
               count, " elements");
      TZ_CHECK(s.offset <= file.bytes && 3 * 4 * s.count <= file.bytes - s.offset, src, ": ", file.name,
               " has a section at byte ", s.offset, " running past the file's ", file.bytes, " bytes");
      cover[s.group].push_back({s.begin, s.count});
      file.sections.push_back(s);
    }
    m.files.push_back(std::move(file));
  }
  for (std::size_t g = 0; g < cover.size(); ++g) {
    auto& c = cover[g];
    std::sort(c.begin(), c.end());
    std::uint64_t at = 0;
    for (const auto& [b, n] : c) {
      TZ_CHECK(b == at, src, ": group ", m.groups[g].name, " elements [", std::min(b, at), ", ", std::max(b, at),
               b > at ? ") are in no file" : ") are in two sections", "; the checkpoint is incomplete or damaged");
      at = b + n;
    }
    TZ_CHECK(at == m.groups[g].count, src, ": group ", m.groups[g].name, " elements [", at, ", ",
             m.groups[g].count, ") are in no file; the checkpoint is incomplete or damaged");
  }
  return m;
}

CheckpointManifest read_manifest(const std::string& dir) {
  const std::string path = dir + "/manifest.json";
  const std::string text = read_small_file(path, "checkpoint manifest", kMaxManifestBytes);
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

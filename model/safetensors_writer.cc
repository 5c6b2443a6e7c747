// write_safetensors: the tensors in name order through a SafetensorsStream.
#include "model/safetensors_writer.h"

#include <algorithm>

#include "core/error.h"
#include "core/progress.h"
#include "model/safetensors_stream.h"

namespace tz {

void write_safetensors(const std::string& path, std::vector<SafetensorsWriteTensor> tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::sort(tensors.begin(), tensors.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  std::vector<SafetensorsDecl> decls;
  for (const auto& t : tensors) {
    TZ_CHECK(int(t.raw != nullptr) + int(t.f32 != nullptr) + int(bool(t.fill)) == 1, "tensor '", t.name,
             "' for safetensors file '", path, "' needs exactly one of raw bytes, fp32 values or a fill function");
    TZ_CHECK(t.raw || safetensors_detail::converts_to_float(t.dtype), "tensor '", t.name, "' for safetensors file '",
             path, "' has dtype ", safetensors_dtype_name(t.dtype),
             "; fp32 values can only be written as F32, F16 or BF16");
    decls.push_back({t.name, t.dtype, t.shape});
  }
  std::uint64_t total = 0;
  for (const SafetensorsDecl& d : decls) total += safetensors_bytes(d);
  SafetensorsStream out(path, std::move(decls), metadata);
  Progress progress("writing " + path, total);
  std::vector<float> filled;  // one tensor at a time, for `fill`
  for (const auto& t : tensors) {
    progress.advance(safetensors_bytes(out.next()));  // the tensor about to be written
    if (t.raw) {
      out.put_raw(t.raw);
    } else if (t.fill) {
      filled.resize(out.next().count());
      t.fill(filled.data());
      out.put(filled.data());
    } else {
      out.put(t.f32);
    }
  }
  out.commit();
}

}  // namespace tz

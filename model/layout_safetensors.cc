#include "model/layout_safetensors.h"

#include "core/error.h"
#include "model/safetensors_writer.h"

namespace tz {

void save_layout_safetensors(const std::string& path, const ParamLayout& layout,
                             const std::vector<const float*>& groups, DType dtype, const std::string& what) {
  TZ_CHECK(dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16, "saving ", what, " to '", path,
           "' as ", dtype_name(dtype), " is not supported; use fp32, bf16 or fp16");
  TZ_CHECK(groups.size() == layout.groups.size(), "saving ", what, " to '", path, "': got ", groups.size(),
           " parameter groups but the layout has ", layout.groups.size());
  const SafetensorsDType sd = to_safetensors_dtype(dtype);
  std::vector<SafetensorsWriteTensor> tensors;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    TZ_CHECK(groups[g] != nullptr, "saving ", what, " to '", path, "': group ", layout.groups[g].name,
             " has no data");
    for (const auto& t : layout.groups[g].tensors)
      tensors.push_back({t.hf_name, sd, t.hf_shape, nullptr, groups[g] + t.offset, nullptr});
  }
  write_safetensors(path, std::move(tensors), {{"format", "pt"}});
}

}  // namespace tz

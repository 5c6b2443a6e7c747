// The table of llm.c's magics and the byte signatures of other formats (see file_signature.h).
#include "model/file_signature.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace tz {
namespace {

struct Magic {
  std::int32_t magic;
  const char* name;
};

// Every magic llm.c writes (its dataloader, train_gpt2 and test_gpt2, the tokenizer and the state files).
const std::vector<Magic>& llmc_magics() {
  static const std::vector<Magic> m = {{20240520, "llm.c uint16 tokens"},  {20240801, "llm.c uint32 tokens"},
                                       {20240326, "llm.c GPT-2 model"},    {20240327, "llm.c debug state"},
                                       {20240328, "llm.c tokenizer"},      {20240527, "llm.c training state"}};
  return m;
}

bool starts(const std::string& head, const char* sig, std::size_t n) {
  return head.size() >= n && std::memcmp(head.data(), sig, n) == 0;
}

}  // namespace

std::string llmc_magic_name(std::int32_t magic) {
  for (const Magic& m : llmc_magics())
    if (m.magic == magic) return m.name;
  return "";
}

std::string describe_llmc_magic(std::int32_t magic) {
  if (const std::string known = llmc_magic_name(magic); !known.empty())
    return "an " + known + " file (magic " + std::to_string(magic) + ")";
  std::vector<Magic> by_distance = llmc_magics();
  std::sort(by_distance.begin(), by_distance.end(), [&](const Magic& a, const Magic& b) {
    return std::llabs((long long)a.magic - magic) < std::llabs((long long)b.magic - magic);
  });
  return "an llm.c file with the unknown magic " + std::to_string(magic) + " (a damaged copy perhaps of an " +
         by_distance[0].name + " file, magic " + std::to_string(by_distance[0].magic) + ", or an " + by_distance[1].name +
         " file, magic " + std::to_string(by_distance[1].magic) + ")";
}

std::string signature_format(const std::string& head, std::uint64_t size) {
  if (head.size() >= 9) {  // safetensors: a little-endian u64 header length, then the JSON header's '{'
    std::uint64_t n = 0;
    std::memcpy(&n, head.data(), 8);
    if (n >= 2 && n <= size - 8 && head[8] == '{')
      return "a safetensors file (an 8-byte header length " + std::to_string(n) + ", then a JSON header)";
  }
  if (starts(head, "\x93NUMPY", 6)) return "a NumPy .npy file";
  if (starts(head, "PK\x03\x04", 4) || starts(head, "PK\x05\x06", 4))
    return "a zip archive (a NumPy .npz, or a PyTorch .pt/.bin checkpoint)";
  if (starts(head, "\x1f\x8b\x08", 3) && head.size() >= 4 && (unsigned char)head[3] < 0x20) return "a gzip file";
  if (starts(head, "GGUF", 4)) return "a GGUF model";
  return "";
}

}  // namespace tz

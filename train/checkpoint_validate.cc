// The manifest's layout check: file names, sizes, sections and coverage, each refusal naming the field.
#include "train/checkpoint_validate.h"

#include <algorithm>
#include <limits>
#include <tuple>
#include <vector>

#include "core/error.h"

namespace tz {
namespace {

constexpr std::uint64_t kBytesPerElement = 3 * sizeof(float);  // master, Adam m, Adam v
constexpr std::uint64_t kMaxElements = std::numeric_limits<std::uint64_t>::max() / kBytesPerElement;
constexpr const char* kDamaged = "; the checkpoint is damaged: resume from another checkpoint";

bool plain_name(const std::string& s) {
  return !s.empty() && s.size() <= 255 && s[0] != '.' && s != "manifest.json" &&
         s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") ==
             std::string::npos;
}

// One section as it covers its group: elements [begin, begin + count), and where the manifest lists it.
struct Cover {
  std::uint64_t begin, count;
  std::size_t file, section;
  bool operator<(const Cover& o) const {  // total, so that a refusal names the same two sections every time
    return std::tie(begin, count, file, section) < std::tie(o.begin, o.count, o.file, o.section);
  }
};

class LayoutCheck {
 public:
  LayoutCheck(const CheckpointManifest& m, const std::string& src) : m_(m), src_(src) {}

  void run() {
    TZ_CHECK(!m_.groups.empty(), src_, ": 'groups' is empty: the manifest lists no parameter groups",
             kDamaged);
    const std::uint64_t file_bytes = names_and_bytes();
    group_sizes(file_bytes);
    std::vector<std::vector<Cover>> cover(m_.groups.size());
    for (std::size_t i = 0; i < m_.files.size(); ++i) sections_of(i, cover);
    for (std::size_t g = 0; g < cover.size(); ++g) covered_once(g, cover[g]);
  }

 private:
  std::string section(std::size_t i, std::size_t k) const {
    return "files[" + std::to_string(i) + "] (" + m_.files[i].name + ").sections[" + std::to_string(k) + "]";
  }

  // Plain, distinct names; returns the bytes of all files (refusing a sum past 64 bits).
  std::uint64_t names_and_bytes() const {
    std::vector<std::pair<std::string, std::size_t>> names;
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < m_.files.size(); ++i) {
      const CheckpointFile& f = m_.files[i];
      TZ_CHECK(plain_name(f.name), src_, ": files[", i, "].name '", f.name,
               "' is not a plain file name inside the checkpoint folder (letters, digits, '_', '.' and '-', "
               "not starting with '.', not manifest.json)",
               kDamaged);
      TZ_CHECK(f.bytes <= std::numeric_limits<std::uint64_t>::max() - total, src_, ": files[", i, "] (",
               f.name, ").bytes ", f.bytes, " makes the files' sizes add up to more than 2^64 bytes",
               kDamaged);
      total += f.bytes;
      names.emplace_back(f.name, i);
    }
    std::sort(names.begin(), names.end());
    for (std::size_t k = 1; k < names.size(); ++k)
      TZ_CHECK(names[k].first != names[k - 1].first, src_, ": files[", names[k - 1].second, "] and files[",
               names[k].second, "] both name '", names[k].first, "'", kDamaged);
    return total;
  }

  // Before any section is looked at: the groups' elements must fit the bytes the files have.
  void group_sizes(std::uint64_t file_bytes) const {
    std::uint64_t need = 0;
    for (std::size_t g = 0; g < m_.groups.size(); ++g) {
      const CheckpointGroup& grp = m_.groups[g];
      TZ_CHECK(!grp.name.empty(), src_, ": groups[", g, "].name is empty", kDamaged);
      TZ_CHECK(grp.count <= kMaxElements, src_, ": groups[", g, "] (", grp.name, ").count ", grp.count,
               " is more elements than 2^64 bytes hold at 12 bytes each", kDamaged);
      const std::uint64_t bytes = grp.count * kBytesPerElement;
      TZ_CHECK(bytes <= file_bytes - need, src_, ": groups[", g, "] (", grp.name, ").count ", grp.count,
               ": the groups up to it need more than the ", file_bytes, " bytes all the data files hold (",
               kBytesPerElement, " bytes per element)", kDamaged);
      need += bytes;
    }
  }

  // File i's sections: inside their group and the file, not overlapping, filling the file exactly.
  void sections_of(std::size_t i, std::vector<std::vector<Cover>>& cover) const {
    const CheckpointFile& f = m_.files[i];
    std::vector<std::pair<std::uint64_t, std::size_t>> by_offset;  // (offset, section)
    by_offset.reserve(f.sections.size());
    for (std::size_t k = 0; k < f.sections.size(); ++k) {
      const CheckpointSection& s = f.sections[k];
      TZ_CHECK(s.group >= 0 && std::size_t(s.group) < m_.groups.size(), src_, ": ", section(i, k), ".group ",
               s.group, " is not one of the ", m_.groups.size(), " groups", kDamaged);
      const CheckpointGroup& g = m_.groups[std::size_t(s.group)];
      TZ_CHECK(s.count > 0, src_, ": ", section(i, k), ".count is 0", kDamaged);
      TZ_CHECK(s.begin <= g.count && s.count <= g.count - s.begin, src_, ": ", section(i, k), " elements [",
               s.begin, ", +", s.count, ") run past group ", g.name, " of ", g.count, " elements", kDamaged);
      const std::uint64_t size = s.count * kBytesPerElement;  // s.count <= g.count <= kMaxElements
      TZ_CHECK(s.offset <= f.bytes && size <= f.bytes - s.offset, src_, ": ", section(i, k), " bytes [",
               s.offset, ", +", size, ") run past the end of the file's ", f.bytes, " bytes", kDamaged);
      by_offset.emplace_back(s.offset, k);
      cover[std::size_t(s.group)].push_back({s.begin, s.count, i, k});
    }
    std::sort(by_offset.begin(), by_offset.end());
    std::uint64_t end = 0;  // of the bytes the sections so far take
    std::size_t prev = 0;
    for (const auto& [offset, k] : by_offset) {
      TZ_CHECK(offset >= end, src_, ": ", section(i, k), " bytes [", offset, ", ", end, ") overlap those of ",
               section(i, prev), kDamaged);
      TZ_CHECK(offset == end, src_, ": files[", i, "] (", f.name, ") bytes [", end, ", ", offset,
               ") belong to no section", kDamaged);
      end = offset + f.sections[k].count * kBytesPerElement;
      prev = k;
    }
    TZ_CHECK(end == f.bytes, src_, ": files[", i, "] (", f.name, ") bytes [", end, ", ", f.bytes,
             ") belong to no section", kDamaged);
  }

  // Every element of group g in exactly one section: sort by begin and walk.
  void covered_once(std::size_t g, std::vector<Cover>& c) const {
    const CheckpointGroup& grp = m_.groups[g];
    std::sort(c.begin(), c.end());
    std::uint64_t at = 0;
    for (std::size_t k = 0; k < c.size(); ++k) {
      TZ_CHECK(c[k].begin <= at, src_, ": group ", grp.name, " elements [", at, ", ", c[k].begin,
               ") are in no file", kDamaged);
      TZ_CHECK(c[k].begin == at, src_, ": group ", grp.name, " elements [", c[k].begin, ", ",
               std::min(at, c[k].begin + c[k].count), ") are in two sections, ",
               section(c[k - 1].file, c[k - 1].section), " and ", section(c[k].file, c[k].section), kDamaged);
      at = c[k].begin + c[k].count;
    }
    TZ_CHECK(at == grp.count, src_, ": group ", grp.name, " elements [", at, ", ", grp.count,
             ") are in no file", kDamaged);
  }

  const CheckpointManifest& m_;
  const std::string& src_;
};

}  // namespace

void validate_manifest_layout(const CheckpointManifest& m, const std::string& source) {
  LayoutCheck(m, source).run();
}

}  // namespace tz

// Checkpoint data files: positioned reads across sections, streaming checksums.
#include "train/checkpoint_io.h"

#include <xxhash.h>

#include <algorithm>

#include "core/error.h"

namespace tz {

CheckpointReader::CheckpointReader(std::string dir) : dir_(std::move(dir)), m_(read_manifest(dir_)) {
  pieces_.resize(m_.groups.size());
  for (std::size_t f = 0; f < m_.files.size(); ++f)
    for (const auto& s : m_.files[f].sections) pieces_[s.group].push_back({s.begin, s.count, s.offset, f});
  for (auto& p : pieces_)
    std::sort(p.begin(), p.end(), [](const Piece& a, const Piece& b) { return a.begin < b.begin; });
  files_.resize(m_.files.size());
  // The manifest's tensors were checked against the model's (manifest_from_json): same count, in order.
  const ParamLayout layout = ParamLayout::build(m_.model);
  moved_.resize(m_.groups.size());
  for (std::size_t g = 0; g < m_.groups.size(); ++g) {
    const GroupSpec& lg = layout.groups[g];
    const CheckpointGroup& cg = m_.groups[g];
    counts_.push_back(lg.count);
    bool same = cg.count == lg.count;
    for (std::size_t k = 0; k < cg.stored.size(); ++k)
      same = same && cg.stored[k].offset == lg.tensors[k].offset;
    if (!same)
      for (std::size_t k = 0; k < cg.stored.size(); ++k)
        moved_[g].push_back({lg.tensors[k].offset, cg.stored[k].offset, lg.tensors[k].count});
  }
}

CheckpointReader::~CheckpointReader() = default;

const InputFile& CheckpointReader::file(std::size_t i) const {
  if (!files_[i]) {
    auto f = std::make_unique<InputFile>(dir_ + "/" + m_.files[i].name, "checkpoint data file");
    TZ_CHECK(f->size() == m_.files[i].bytes, "checkpoint data file '", f->path(), "' is ", f->size(),
             " bytes but the manifest says ", m_.files[i].bytes, "; the checkpoint is damaged (truncated?): ",
             "resume from another one");
    files_[i] = std::move(f);
  }
  return *files_[i];
}

void CheckpointReader::read(int g, StateArray a, std::uint64_t begin, std::uint64_t n, float* out) const {
  TZ_CHECK(g >= 0 && std::size_t(g) < pieces_.size() && begin <= counts_[g] && n <= counts_[g] - begin,
           "checkpoint read of group ", g, " elements [", begin, ", +", n, ") is out of range");
  if (moved_[g].empty()) return read_stored(g, a, begin, n, out);
  std::fill(out, out + n, 0.0f);
  const std::uint64_t end = begin + n;
  for (const Moved& t : moved_[g]) {
    const std::uint64_t lo = std::max(begin, t.to), hi = std::min(end, t.to + t.count);
    if (lo < hi) read_stored(g, a, t.from + (lo - t.to), hi - lo, out + (lo - begin));
  }
}

bool CheckpointReader::relaid() const {
  for (const auto& g : moved_)
    if (!g.empty()) return true;
  return false;
}

void CheckpointReader::read_stored(int g, StateArray a, std::uint64_t begin, std::uint64_t n,
                                   float* out) const {
  const auto& ps = pieces_[g];
  // The last piece starting at or before `begin`; the manifest's validation (validate_manifest_layout)
  // guarantees the pieces tile the group and lie inside their files.
  auto it = std::upper_bound(ps.begin(), ps.end(), begin, [](std::uint64_t x, const Piece& p) { return x < p.begin; });
  for (--it; n > 0; ++it) {
    const std::uint64_t skip = begin - it->begin, take = std::min(n, it->count - skip);
    const std::uint64_t off = it->offset + (std::uint64_t(a) * it->count + skip) * sizeof(float);
    file(it->file).read_at(out, take * sizeof(float), off);
    out += take, begin += take, n -= take;
  }
}

void CheckpointReader::verify_files() const {
  std::uint64_t total = 0;
  for (const CheckpointFile& f : m_.files) total += f.bytes;
  Progress progress("verifying checkpoint " + dir_, total);
  for (std::size_t f = 0; f < m_.files.size(); ++f) verify_file(f, &progress);
}

void CheckpointReader::verify_file(std::size_t i, Progress* progress) const {
  const InputFile& f = file(i);
  XXH3_state_t* st = XXH3_createState();
  TZ_CHECK(st, "out of memory for a checksum state");
  XXH3_64bits_reset(st);
  std::vector<char> buf(std::size_t(4) << 20);
  for (std::uint64_t off = 0; off < f.size(); off += buf.size()) {
    const std::size_t n = std::size_t(std::min<std::uint64_t>(buf.size(), f.size() - off));
    f.read_at(buf.data(), n, off);
    XXH3_64bits_update(st, buf.data(), n);
    if (progress) progress->advance(n);
  }
  const std::uint64_t got = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  TZ_CHECK(got == m_.files[i].xxh3, "checkpoint data file '", f.path(), "' fails its checksum (xxh3 ", hex64(got),
           ", the manifest says ", hex64(m_.files[i].xxh3), "): the checkpoint is damaged; resume from another one");
}

CheckpointFileWriter::CheckpointFileWriter(const std::string& dir, std::string name)
    : out_(dir + "/" + name, "checkpoint data file", OutputWriter::checkpoint), hash_(XXH3_createState()) {
  TZ_CHECK(hash_, "out of memory for a checksum state");
  XXH3_64bits_reset(static_cast<XXH3_state_t*>(hash_));
  entry_.name = std::move(name);
}

CheckpointFileWriter::~CheckpointFileWriter() { XXH3_freeState(static_cast<XXH3_state_t*>(hash_)); }

void CheckpointFileWriter::write(const void* p, std::size_t bytes) {
  out_.write(p, bytes);
  XXH3_64bits_update(static_cast<XXH3_state_t*>(hash_), p, bytes);
  entry_.bytes += bytes;
}

void CheckpointFileWriter::append(int g, std::uint64_t begin, std::uint64_t n, const float* master, const float* m,
                                  const float* v) {
  if (n == 0) return;
  entry_.sections.push_back({g, begin, n, entry_.bytes});
  for (const float* a : {master, m, v}) write(a, n * sizeof(float));
}

CheckpointFile CheckpointFileWriter::finish() {
  out_.commit();
  entry_.xxh3 = XXH3_64bits_digest(static_cast<XXH3_state_t*>(hash_));
  return entry_;
}

}  // namespace tz

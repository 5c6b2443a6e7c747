// Batches of B*T tokens for one rank out of world, llm.c's DataLoader rule generalised to ranks, with
// an optional per-epoch shuffle of the global batches that is identical on every standard library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace tz {

class DataLoader {
 public:
  // name is the token file's path, for messages. Tokens are 32-bit whatever the file held (uint16 files
  // are widened by read_token_file), so vocabularies past 65,536 work. Every token must be < vocab_size
  // and the data must hold at least world*B*T + 1 tokens; otherwise throws naming the file (and the bad
  // token's position).
  DataLoader(std::vector<std::uint32_t> tokens, int B, int T, int rank, int world, std::uint64_t seed,
             bool shuffle, int vocab_size, const std::string& name);

  // Fills B*T inputs and B*T targets (the inputs shifted by one token).
  // The global batch is world*B*T tokens; global batch i of an epoch starts at token i*world*B*T, and
  // rank r reads the B*T+1 tokens from i*world*B*T + r*B*T. Without shuffle, batches go i = 0, 1, ...
  // and wrap to 0 when the next one would run past the end (llm.c's rule exactly); with shuffle, each
  // epoch visits the same windows in an order drawn from mt19937_64 seeded by (seed, epoch).
  void next_batch(std::int32_t* inputs, std::int32_t* targets);

  // Back to the first batch of epoch 0.
  void reset();
  // Resumes at batch `batch` of epoch `epoch` (what epoch() and batch_index() reported at a checkpoint).
  void seek(std::uint64_t epoch, std::size_t batch);

  std::size_t batches_per_epoch() const { return n_batches_; }
  std::size_t num_tokens() const { return tokens_.size(); }
  std::uint64_t epoch() const { return epoch_; }
  std::size_t batch_index() const { return batch_; }  // the next batch's index within the epoch

 private:
  void build_order();  // the window order of epoch_, in place (no allocation after construction)

  std::vector<std::uint32_t> tokens_;
  std::size_t B_, T_, rank_, world_;
  std::uint64_t seed_;
  bool shuffle_;
  std::string name_;
  std::size_t n_batches_ = 0;
  std::vector<std::size_t> order_;  // window indices of the current epoch
  std::uint64_t epoch_ = 0;
  std::size_t batch_ = 0;
};

}  // namespace tz

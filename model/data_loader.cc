// DataLoader: llm.c's sequential windows per rank, and a portable Fisher-Yates shuffle of them.
#include "model/data_loader.h"

#include <numeric>
#include <utility>

#include "core/error.h"

namespace tz {
namespace {

// SplitMix64's finaliser: spreads (seed, epoch) over all 64 bits so nearby seeds give unrelated streams.
std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Uniform in [0, bound) by rejection. std::uniform_int_distribution is not used because its algorithm
// differs between standard libraries, and the order must be the same everywhere.
std::uint64_t uniform_below(std::mt19937_64& gen, std::uint64_t bound) {
  const std::uint64_t threshold = (0 - bound) % bound;  // 2^64 mod bound: values below it are biased
  for (;;) {
    std::uint64_t r = gen();
    if (r >= threshold) return r % bound;
  }
}

}  // namespace

DataLoader::DataLoader(std::vector<std::uint32_t> tokens, int B, int T, int rank, int world,
                       std::uint64_t seed, bool shuffle, int vocab_size, const std::string& name)
    : tokens_(std::move(tokens)), seed_(seed), shuffle_(shuffle), name_(name) {
  TZ_CHECK(B >= 1 && T >= 1, "data loader for '", name, "': batch size B (", B, ") and sequence length T (",
           T, ") must be at least 1");
  TZ_CHECK(world >= 1 && rank >= 0 && rank < world, "data loader for '", name, "': rank ", rank,
           " is not in a world of ", world);
  TZ_CHECK(vocab_size >= 1, "data loader for '", name, "': vocab size must be positive, got ", vocab_size);
  B_ = std::size_t(B), T_ = std::size_t(T), rank_ = std::size_t(rank), world_ = std::size_t(world);
  const std::size_t global = world_ * B_ * T_;
  TZ_CHECK(tokens_.size() >= global + 1, "token file '", name, "' holds ", tokens_.size(),
           " tokens but one global batch needs world*B*T+1 = ", world_, "*", B_, "*", T_, "+1 = ", global + 1,
           "; use more data or a smaller batch");
  for (std::size_t i = 0; i < tokens_.size(); ++i)
    TZ_CHECK(tokens_[i] < std::uint32_t(vocab_size), "token file '", name, "' has token ", tokens_[i],
             " at position ", i, ", outside the model's vocabulary of ", vocab_size,
             "; the data was tokenised for a different vocabulary (check --vocab or the tokenizer)");
  // Window i is usable while i*global + global + 1 <= N, i.e. for i < (N-1)/global.
  n_batches_ = (tokens_.size() - 1) / global;
  order_.resize(n_batches_);
  build_order();
}

void DataLoader::build_order() {
  std::iota(order_.begin(), order_.end(), std::size_t(0));
  if (!shuffle_) return;
  std::mt19937_64 gen(mix64(seed_ ^ mix64(epoch_)));
  for (std::size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[uniform_below(gen, i)]);
}

void DataLoader::next_batch(std::int32_t* inputs, std::int32_t* targets) {
  const std::size_t start = order_[batch_] * world_ * B_ * T_ + rank_ * B_ * T_;
  const std::uint32_t* src = tokens_.data() + start;
  for (std::size_t i = 0; i < B_ * T_; ++i) {
    // Every token is < vocab_size, an int, so it fits int32.
    inputs[i] = std::int32_t(src[i]);
    targets[i] = std::int32_t(src[i + 1]);
  }
  if (++batch_ == n_batches_) {
    batch_ = 0;
    ++epoch_;
    if (shuffle_) build_order();
  }
}

void DataLoader::reset() { seek(0, 0); }

void DataLoader::seek(std::uint64_t epoch, std::size_t batch) {
  TZ_CHECK(batch < n_batches_, "data loader for '", name_, "': cannot resume at batch ", batch,
           " of an epoch of ", n_batches_,
           " batches; was the checkpoint made with another batch size, world size or data file?");
  epoch_ = epoch;
  batch_ = batch;
  build_order();
}

}  // namespace tz

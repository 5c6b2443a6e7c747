// WeightSource: a model's starting weights, handed out one parameter group at a time, so that a
// rank never holds more than one group's fp32 values while it loads (ModelFamily::open_weights).
#pragma once

#include <functional>
#include <memory>
#include <vector>

namespace tz {

class WeightSource {
 public:
  virtual ~WeightSource() = default;
  // Group g's values as fp32 (resized to the layout's count; alignment padding zero). Throws naming the
  // file and the tensor for values that cannot be trained from (NaN, Inf) or a read that fails.
  virtual void read_group(int g, std::vector<float>& values) = 0;
};

// A source over groups already in memory (a format read whole); each group is handed out once.
class LoadedWeights final : public WeightSource {
 public:
  explicit LoadedWeights(std::vector<std::vector<float>> groups) : groups_(std::move(groups)) {}
  void read_group(int g, std::vector<float>& values) override {
    values = std::move(groups_.at(std::size_t(g)));
    groups_[std::size_t(g)] = {};
  }

 private:
  std::vector<std::vector<float>> groups_;
};

}  // namespace tz

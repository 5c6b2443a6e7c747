// Ranks started with different settings: for each setting that must be shared, the last rank alone
// changes it, and every rank must stop before training with an error naming the setting and both
// values (before: heap corruption, MPI_ERR_TRUNCATE, segfaults or silent divergence, and --resume on one
// rank only crashed inside Open MPI).
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "core/error.h"
#include "model/gpt_init.h"
#include "model/gpt_safetensors.h"
#include "model/token_file.h"
#include "tests/common/test_dir.h"
#include "train/rank_agreement.h"
#include "train/trainer.h"

namespace tz {
namespace {

TrainOptions tiny() {
  TrainOptions o;
  o.model = model_preset("tiny");
  o.steps = 2;
  o.log_every = 0;
  o.val_batches = 1;
  return o;
}

struct Mismatch {
  const char* names;  // what the message must name
  std::function<void(TrainOptions&)> change;
  const char* rank0_value;  // rank 0's value as the message quotes it
};

TEST(RankAgreement, EverySharedSettingThatDiffersStopsEveryRankNamingItAndBothValues) {
  auto comm = make_mpi_world();
  if (comm->size() == 1) GTEST_SKIP() << "needs at least 2 ranks";
  const bool last = comm->rank() == comm->size() - 1;
  const std::vector<Mismatch> cases = {
      {"the model", [](TrainOptions& o) { o.model.n_embd = 128; }, "2 layers, 4 heads, 64 wide"},
      {"the model", [](TrainOptions& o) { o.model.n_layer = 3; }, "2 layers"},
      {"--steps", [](TrainOptions& o) { o.steps = 3; }, "2"},
      {"--grad-accum", [](TrainOptions& o) { o.grad_accum = 2; }, "1"},
      {"--zero-stage", [](TrainOptions& o) { o.zero.stage = 2; }, "0"},
      {"--seed", [](TrainOptions& o) { o.seed = 1; }, "1337"},
      {"--lr, --min-lr", [](TrainOptions& o) { o.lr.lr = 1e-3f; }, "0.000300000014"},
      {"--dtype", [](TrainOptions& o) { o.dtype = DType::bf16; }, "fp32"},
      {"--seq-len", [](TrainOptions& o) { o.seq_len = 32; }, "64"},
      {"--micro-batch", [](TrainOptions& o) { o.micro_batch = 2; }, "4"},
      {"--offload-optimizer", [](TrainOptions& o) { o.offload.optimizer = Tier::host; }, "device, device, device"},
      {"--reduce-bucket-size", [](TrainOptions& o) { o.zero.reduce_bucket_size = 1000; }, "500000000"},
      {"--optimizer-states, --master-weights",
       [](TrainOptions& o) { o.offload.optimizer_states = MomentFormat::int8; }, "fp32, fp32"},
      {"--optimizer-states, --master-weights",
       [](TrainOptions& o) { o.offload.master_weights = MasterFormat::bf16_sr; }, "fp32, fp32"},
      {"--shuffle", [](TrainOptions& o) { o.shuffle = true; }, "off"},
      // The checkpoint options and which outputs are given (paths of the outputs may differ).
      {"--resume", [](TrainOptions& o) { o.resume = "latest"; }, "not given"},
      {"--save-dir", [](TrainOptions& o) { o.save_dir = "/nonexistent/ckpt"; }, "not given"},
      {"--save-every, --keep-last", [](TrainOptions& o) { o.save_every = 5; }, "0, 0"},
      {"--save-every, --keep-last", [](TrainOptions& o) { o.keep_last = 2; }, "0, 0"},
      {"which outputs are given", [](TrainOptions& o) { o.save_safetensors = "/nonexistent/m.safetensors"; },
       "--save-safetensors not given, --metrics not given, --save-hf not given"},
      {"which outputs are given", [](TrainOptions& o) { o.metrics = "/nonexistent/m.jsonl"; },
       "--save-safetensors not given, --metrics not given, --save-hf not given"},
      {"which outputs are given", [](TrainOptions& o) { o.save_hf = "/nonexistent/hf"; },
       "--save-safetensors not given, --metrics not given, --save-hf not given"},
  };
  for (const Mismatch& c : cases) {
    TrainOptions o = tiny();
    if (last) c.change(o);
    try {
      train(o, *comm, [](const std::string&) {});
      ADD_FAILURE() << "trained with a different " << c.names << " on rank " << comm->size() - 1;
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("the ranks were started with different settings: "), std::string::npos) << m;
      EXPECT_NE(m.find(c.names), std::string::npos) << m;
      EXPECT_NE(m.find(std::string(" is ") + c.rank0_value), std::string::npos) << m;
      EXPECT_NE(m.find("on rank " + std::to_string(comm->size() - 1)), std::string::npos) << m;
    }
  }
}

// The data is compared by content, not by path: the same tokens under different names agree, other
// tokens do not.
TEST(RankAgreement, DataFilesAreComparedByContent) {
  auto comm = make_mpi_world();
  if (comm->size() == 1) GTEST_SKIP() << "needs at least 2 ranks";
  testing::TestDir dir;
  const std::string same = dir.file("r" + std::to_string(comm->rank()) + ".bin");
  write_token_file(same, std::vector<std::uint32_t>(20000, 66));
  TrainOptions o = tiny();
  o.data = same;
  EXPECT_NO_THROW(check_ranks_agree(o, *comm));
  std::vector<std::uint32_t> tokens(20000, 66);
  if (comm->rank() == comm->size() - 1) tokens[123] = 67;
  const std::string other = dir.file("d" + std::to_string(comm->rank()) + ".bin");
  write_token_file(other, tokens);
  o.data = other;
  try {
    check_ranks_agree(o, *comm);
    ADD_FAILURE() << "different data on the last rank was not seen";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--data is 41024 bytes, sampled xxh3 "), std::string::npos) << e.what();
  }
}

// --init-from is compared by every byte each rank read, after loading and before the values are used: the
// same bytes under different names agree and train; one float's lowest bit changed on the last rank stops
// every rank naming --init-from; a file the last rank cannot load stops every rank too.
TEST(RankAgreement, InitFromIsComparedByEveryByteRead) {
  auto comm = make_mpi_world();
  if (comm->size() == 1) GTEST_SKIP() << "needs at least 2 ranks";
  const bool last = comm->rank() == comm->size() - 1;
  testing::TestDir dir;
  TrainOptions o = tiny();
  o.steps = 1;
  const ParamLayout layout = ParamLayout::build(o.model);
  std::vector<std::vector<float>> groups(layout.groups.size());
  for (std::size_t g = 0; g < groups.size(); ++g) init_gpt_group(o.model, layout, 7, int(g), groups[g]);
  auto write = [&](const std::string& path) {
    std::vector<const float*> p;
    for (const auto& g : groups) p.push_back(g.data());
    save_gpt_safetensors(path, layout, p, DType::f32);
    return path;
  };
  o.init_from = write(dir.file("same-" + std::to_string(comm->rank()) + ".safetensors"));
  EXPECT_NO_THROW(train(o, *comm, [](const std::string&) {}));
  if (last) {
    std::uint32_t bits;
    std::memcpy(&bits, &groups.back()[3], 4);
    bits ^= 1;
    std::memcpy(&groups.back()[3], &bits, 4);
  }
  o.init_from = write(dir.file("other-" + std::to_string(comm->rank()) + ".safetensors"));
  try {
    train(o, *comm, [](const std::string&) {});
    ADD_FAILURE() << "trained from different --init-from bytes";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("the ranks were started with different settings: the contents of --init-from is "),
              std::string::npos) << m;
    EXPECT_NE(m.find(" bytes read, xxh3 "), std::string::npos) << m;
    EXPECT_NE(m.find("on rank " + std::to_string(comm->size() - 1)), std::string::npos) << m;
  }
  if (last) o.init_from = dir.file("missing.safetensors");
  try {
    train(o, *comm, [](const std::string&) {});
    ADD_FAILURE() << "trained with a --init-from the last rank cannot open";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(last ? m.find("missing.safetensors")
                   : m.find("rank " + std::to_string(comm->size() - 1) + " failed to load --init-from"),
              std::string::npos) << m;
  }
}

// Output paths may differ per rank: only whether each is given is compared.
TEST(RankAgreement, OutputPathsMayDifferPerRank) {
  auto comm = make_mpi_world();
  if (comm->size() == 1) GTEST_SKIP() << "needs at least 2 ranks";
  TrainOptions o = tiny();
  o.save_safetensors = "/nonexistent/model-" + std::to_string(comm->rank()) + ".safetensors";
  o.metrics = "/nonexistent/metrics-" + std::to_string(comm->rank()) + ".jsonl";
  EXPECT_NO_THROW(check_ranks_agree(o, *comm));
}

// Lists of settings of different lengths (ranks running different builds) are refused on every rank before
// their contents are exchanged, and values longer than a slot are compared in full through their hash.
TEST(RankAgreement, SettingListsOfDifferentLengthsAndLongValues) {
  auto comm = make_mpi_world();
  if (comm->size() == 1) GTEST_SKIP() << "needs at least 2 ranks";
  const bool last = comm->rank() == comm->size() - 1;
  std::vector<std::pair<std::string, std::string>> s = {{"a", "1"}, {"b", "2"}};
  if (last) s.push_back({"c", "3"});
  try {
    check_settings_agree(s, *comm);
    ADD_FAILURE() << "lists of different lengths agreed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the ranks compare different numbers of settings (2 on rank 0, 3 on rank " +
                                         std::to_string(comm->size() - 1)),
              std::string::npos)
        << e.what();
  }
  const std::string long_value(200, 'x');
  EXPECT_NO_THROW(check_settings_agree({{"long", long_value}}, *comm));
  std::string other = long_value;
  if (last) other[150] = 'y';  // past the part of the value that fits a slot
  try {
    check_settings_agree({{"long", other}}, *comm);
    ADD_FAILURE() << "long values that differ past the slot agreed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("different settings: long is xxxx"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(check_settings_agree({}, *comm));
}

}  // namespace
}  // namespace tz

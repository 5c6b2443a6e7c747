// Shared settings as fixed-width strings, all-gathered and compared with rank 0's.
#include "train/rank_agreement.h"

#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "core/error.h"
#include "train/data_identity.h"

namespace tz {
namespace {

constexpr std::size_t kSlot = 128;  // bytes per value in the exchange (longer values are cut, with a hash)

std::string num(double x) {
  char b[40];
  std::snprintf(b, sizeof b, "%.9g", x);
  return b;
}

const char* given(const std::string& path) { return path.empty() ? "not given" : "given"; }

// A value that fits the slot, or its start and a hash of the whole.
std::string fit(const std::string& v) {
  if (v.size() < kSlot) return v;
  char h[24];
  std::snprintf(h, sizeof h, " #%016llx", static_cast<unsigned long long>(XXH3_64bits(v.data(), v.size())));
  return v.substr(0, kSlot - 1 - std::strlen(h)) + h;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> shared_settings(const TrainOptions& o) {
  const ZeroOptions& z = o.zero;
  const OffloadOptions& f = o.offload;
  return {
      {"the model (--model, --n-layer, --n-head, --n-embd, --vocab, --init-from)", o.model.describe()},
      {"--seq-len", std::to_string(o.seq_len)},
      {"--micro-batch", std::to_string(o.micro_batch)},
      {"--grad-accum", std::to_string(o.grad_accum)},
      {"--steps", std::to_string(o.steps)},
      {"--dtype", std::string(dtype_name(o.dtype))},
      {"--checkpoint-activations", o.checkpointing == ActivationCheckpointing::off ? "off" : "per block"},
      {"--device, --tf32, --attention-math",
       device_kind_name(o.device) + (o.tf32 ? ", on, " : ", off, ") + o.attention_math},
      {"--seed", std::to_string(o.seed)},
      {"--shuffle", o.shuffle ? "on" : "off"},
      {"--data", data_identity(o.data)},
      {"--val-data", data_identity(o.val_data)},
      {"--val-every, --val-batches", std::to_string(o.val_every) + ", " + std::to_string(o.val_batches)},
      {"--lr, --min-lr, --warmup, --lr-schedule",
       num(o.lr.lr) + ", " + num(o.lr.min_lr) + ", " + std::to_string(o.lr.warmup) + ", " + describe_lr_schedule(o.lr)},
      {"--beta1, --beta2, --eps, --weight-decay, --grad-clip", num(o.adam.beta1) + ", " + num(o.adam.beta2) + ", " +
                                                               num(o.adam.eps) + ", " + num(o.adam.weight_decay) +
                                                               ", " + num(o.adam.grad_clip)},
      {"fp16 loss scaling (--loss-scale, --initial-scale-power, --loss-scale-window, --hysteresis, --min-loss-scale)",
       num(o.fp16.loss_scale) + ", " + std::to_string(o.fp16.initial_scale_power) + ", " +
           std::to_string(o.fp16.loss_scale_window) + ", " + std::to_string(o.fp16.hysteresis) + ", " +
           num(o.fp16.min_loss_scale)},
      {"--zero-stage", std::to_string(z.stage)},
      {"--reduce-bucket-size, --allgather-bucket-size, overlap_comm, --comm-piece-bytes",
       std::to_string(z.reduce_bucket_size) + ", " + std::to_string(z.allgather_bucket_size) + ", " +
           (z.overlap_comm ? "on" : "off") + ", " + std::to_string(z.comm_piece_bytes)},
      {"--prefetch-bucket-size, --max-live-parameters, --param-persistence-threshold",
       std::to_string(z.prefetch_bucket_size) + ", " + std::to_string(z.max_live_parameters) + ", " +
           std::to_string(z.param_persistence_threshold)},
      {"--offload-optimizer, --offload-param, --offload-activations",
       tier_name(f.optimizer) + ", " + tier_name(f.param) + ", " + tier_name(f.activations)},
      {"--overlap-optimizer, --overlap-optimizer-share",
       optimizer_overlap_name(f.overlap_optimizer) + ", " + num(f.overlap_optimizer_share)},
      {"--optimizer-states, --master-weights",
       std::string(moment_format_name(f.optimizer_states)) + ", " + std::string(master_format_name(f.master_weights))},
      {"--offload-ratio-master, -m, -v", num(f.host_ratio_master) + ", " + num(f.host_ratio_m) + ", " + num(f.host_ratio_v)},
      {"sub_group_size, buffer_count, aio block size",
       std::to_string(f.sub_group_size) + ", " + std::to_string(f.buffer_count) + ", " + std::to_string(f.aio_block_size)},
      {"train_batch_size", std::to_string(o.train_batch_size)},
      // Every rank takes part in resuming, saving and exporting (collectives and shards in one folder).
      {"--resume", o.resume.empty() ? "not given" : o.resume},
      {"--save-dir", o.save_dir.empty() ? "not given" : o.save_dir},
      {"--save-every, --keep-last", std::to_string(o.save_every) + ", " + std::to_string(o.keep_last)},
      {"which outputs are given (their paths may differ)",
       std::string("--save-safetensors ") + given(o.save_safetensors) + ", --metrics " + given(o.metrics) +
           ", --save-hf " + given(o.save_hf)},
  };
}

void check_settings_agree(const std::vector<std::pair<std::string, std::string>>& settings, Communicator& comm) {
  if (comm.size() == 1) return;
  const std::size_t N = std::size_t(comm.size());
  // The number of settings first, so that the exchange below has the same size on every rank.
  double count = double(settings.size());
  std::vector<double> counts(N);
  comm.all_gather(&count, counts.data(), 1, DType::f64)->wait();
  for (std::size_t r = 1; r < N; ++r)
    TZ_CHECK(counts[r] == counts[0], "the ranks compare different numbers of settings (", counts[0], " on rank 0, ",
             counts[r], " on rank ", r, "): they run different tierzero builds; start every rank with the same binary");
  const std::size_t K = settings.size();
  if (K == 0) return;
  std::vector<char> mine(K * kSlot, '\0'), all(N * K * kSlot, '\0');
  for (std::size_t k = 0; k < K; ++k) {
    const std::string v = fit(settings[k].second);
    std::memcpy(mine.data() + k * kSlot, v.data(), v.size());
  }
  comm.all_gather(mine.data(), all.data(), K * kSlot / 2, DType::u16)->wait();
  // A slot always ends with a NUL (fit keeps values shorter than kSlot), whatever another rank sent.
  for (std::size_t i = kSlot - 1; i < all.size(); i += kSlot) all[i] = '\0';
  auto value = [&](std::size_t rank, std::size_t k) { return std::string(all.data() + (rank * K + k) * kSlot); };
  for (std::size_t k = 0; k < K; ++k)
    for (std::size_t r = 1; r < N; ++r)
      TZ_CHECK(value(r, k) == value(0, k), "the ranks were started with different settings: ", settings[k].first,
               " is ", value(0, k), " on rank 0 but ", value(r, k), " on rank ", r,
               "; start every rank with the same flags, config and data");
}

void check_ranks_agree(const TrainOptions& opt, Communicator& comm) { check_settings_agree(shared_settings(opt), comm); }

}  // namespace tz

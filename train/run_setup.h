// A Run: everything one training job allocates, in dependency order (the plan, the device and its
// stream, the device communicator, the planned buffers, the data, the engine and the model, the loss
// scalars and the token staging). train() makes one and drives it with a Loop (train/train_loop.h).
#pragma once

#include <cstdint>
#include <memory>
#include <utility>

#include "comm/communicator.h"
#include "core/device.h"
#include "model/data_loader.h"
#include "model/model.h"
#include "train/checkpoint.h"
#include "train/train_hooks.h"
#include "train/train_options.h"
#include "zero/engine.h"
#include "zero/memory_plan.h"

namespace tz {

// The device a job makes for these options (budgets, pinning, GPU, product and attention math).
DeviceOptions device_options(const TrainOptions& opt);

struct Run {
  // With `ckpt`, the initial values are the checkpoint's master weights; without it --init-from's, or
  // the model's seeded initialisation.
  Run(const TrainOptions& opt, Communicator& comm, const TrainHooks& hooks, const CheckpointReader* ckpt);
  ~Run();
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  // The sums over ranks of slots [i, i + n) of the scalars, read back to the host (readback[i..]), and
  // the slots zeroed.
  void reduce_scalars(int i, int n, ReduceOp op = ReduceOp::sum);

  // The next set of [inputs | targets] to fill: waits until the forward that last used it has copied it
  // up.
  std::pair<std::int32_t*, std::int32_t*> next_tokens(std::size_t BT);
  void tokens_copied(Stream& s) { tokens_used[token_set]->record(s); }

  MemoryPlan plan;
  std::unique_ptr<Device> dev;
  std::unique_ptr<Communicator> device_comm_owned;
  Communicator* dcomm = nullptr;  // device buffers: NCCL on a cuda device, else the host communicator
  std::unique_ptr<Stream> stream;
  std::unique_ptr<Event> done;
  std::unique_ptr<PlannedBuffers> planned;
  std::unique_ptr<DataLoader> train_loader, val_loader;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<Model> model;
  Buffer<double> losses, readback;
  // Two sets of [inputs | targets] in pinned memory (a copy from pageable memory would block the host on
  // a GPU), each with the event recorded after the forward that copied it up.
  Buffer<std::int32_t> tokens;
  std::unique_ptr<Event> tokens_used[2];
  int token_set = 0;
};

}  // namespace tz

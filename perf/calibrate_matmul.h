// `tierzero bench calibrate`'s matmul rates (issue 33): the calibrated model's matrix products, as the
// training step runs them (its shapes, transposes and output dtypes, on the CPU backend's gemm), timed with
// the model's width halved, as is and doubled, and with its tokens per micro-step halved and doubled: the
// curves (zero/matmul_rates.h) by which a plan moves the calibrated step rate to another model's shape.
#pragma once

#include "comm/communicator.h"
#include "model/model_config.h"
#include "perf/calibrate.h"
#include "zero/matmul_rates.h"

namespace tz {

// `cfg` with its width scaled by `factor`: n_embd, and the MLP's and the heads' widths where the config
// gives them (the heads' count stays). Throws when the result is not a valid model.
ModelConfig scaled_width(ModelConfig cfg, double factor);

// TFLOP/s of one pass over `cfg`'s distinct products at B x T tokens in `dt` (their FLOPs over the sum of
// each one's median time of `reps`, after a warm-up pass).
double products_tflops(const ModelConfig& cfg, int B, int T, DType dt, int reps);

// Both curves, every rank of comm measuring at once (as training runs); each rank's own figures.
MatmulRates measure_matmul_rates(const CalibrateOptions& opt, Communicator* comm);

}  // namespace tz

// How the model reaches parameters and gradients, group by group. The training engine implements
// it: plain data parallel hands out resident buffers; ZeRO-3 gathers a group on acquire and frees it
// on release, and reduce-scatters a group's gradient when the model says it is ready.
#pragma once

#include "core/backend.h"

namespace tz {

enum class Pass { forward, backward };

class ParamProvider {
 public:
  virtual ~ParamProvider() = default;
  // The full group's working params (layout: ParamLayout), valid until release(group, pass).
  virtual CView acquire(int group, Pass pass) = 0;
  virtual void release(int group, Pass pass) = 0;
  // The full group's fp32 gradient buffer; backward accumulates (+=) into it.
  virtual float* grad(int group) = 0;
  // Backward has finished writing this group's gradient for the current micro-step.
  virtual void grad_ready(int group) = 0;
};

}  // namespace tz

// Delayed scaling for a model's FP8 linears (ops::fp8_linear): every layer's device scalars
// (scale, amax, scale_inv for x, w and the output's gradient) are views into one f32 tensor, so a
// step's amaxes come back in one copy and the next scales go out in one; DelayedScaling
// (fp8_scaling.h) keeps the histories. end_step runs between steps, outside any captured graph:
// the graph reads the scales and folds the amaxes where the tensor lives.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "nn/fp8_scaling.h"
#include "tensor/tensor.h"

namespace nd::nn {

// Which of a linear's three quantised tensors tensor parallelism splits (their amax is then the
// max over the tp group): column-parallel: w and the output's gradient; row-parallel: x and w.
struct Fp8LinearSharding {
  bool x = false, w = false, dout = false;
};

class Fp8LinearScaling {
 public:
  // Room for `capacity` layers on `device`; every scale starts at 1, every amax at 0.
  Fp8LinearScaling(Device device, int capacity, const DelayedScalingOptions& options = DelayedScalingOptions{});

  // A layer's scalars (ops::kFp8LinearScalars f32, a view); nd::Error past the capacity or on a
  // name registered twice. Its tensors are named NAME.x, NAME.w and NAME.dout.
  Tensor add(const std::string& name, const Fp8LinearSharding& sharding);
  int layers() const { return layers_; }

  // After a step: reads every amax (one copy), reduces them over `replicas` and the sharded ones
  // over `tp` (empty: none; DelayedScaling::update), pushes them into the histories, writes the
  // next scales and zeroes the amaxes (one copy).
  void end_step(const MaxOverGroup& tp, const MaxOverGroup& replicas = nullptr);

  // After scaling()'s state was set from elsewhere (a checkpoint at resume): the device scales
  // (and their inverses) become its scales, the amaxes zero, as after an end_step.
  void write_scales();

  // Forgets the amaxes recorded since the last end_step (an evaluation's forwards: they are not
  // the training step's, and a run must train alike whatever its evaluation interval).
  void drop_amaxes();

  const DelayedScaling& scaling() const { return scaling_; }
  DelayedScaling& scaling() { return scaling_; }

 private:
  // Runs `edit` on a host copy of every layer's records (ops/fp8_linear.h) and writes it back.
  void edit_scalars(const std::function<void(float* records)>& edit);

  Tensor scalars_;  // (capacity * kFp8LinearScalars) f32
  int capacity_;
  int layers_ = 0;
  DelayedScaling scaling_;
};

}  // namespace nd::nn

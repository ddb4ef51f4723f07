// The precision policy of a run: the dtype of each kind of tensor, in place of one dtype for
// everything. --dtype bf16 is {param bf16, compute bf16, grad bf16, reduce bf16, master f32};
// --grad-dtype f32 beside it accumulates the micro-batches' gradients in f32 and reduces them in
// f32 (Megatron's main_grad). --dtype fp16 is {param f16, compute f16, grad f32, reduce f32,
// master f32} with the dynamic loss scaler of train/loss_scaler.h (--loss-scale: on by default
// under fp16 only; on the CPU fp16 runs the emulated f16 kernels). The CPU's f32 runs f32
// throughout. --master-weights false drops the f32 master (the update rounds into the 16-bit
// weights, an ablation). FP8 GEMMs join here.
#pragma once
#include <string>

#include "tensor/dtype.h"
#include "train/config.h"
#include "train/loss_scaler.h"

namespace nd::train {

struct PrecisionPolicy {
  DType param = DType::F32;    // the model's parameters, as the forward reads them
  DType compute = DType::F32;  // activations and GEMM inputs
  DType grad = DType::F32;     // gradients, accumulated over the micro-batches of a step
  DType reduce = DType::F32;   // the data-parallel reduction (today: the gradients' dtype)
  DType master = DType::F32;   // the optimizer's weights (its moments are f32 always)
  bool loss_scaling = false;   // a LossScaler with `loss_scaler` runs the step
  LossScalerOptions loss_scaler;
  bool fp8_attn = false, fp8_mlp = false, fp8_head = false;  // --fp8 --fp8-layers: FP8 GEMMs there
  bool fp8() const { return fp8_attn || fp8_mlp || fp8_head; }

  std::string str() const;  // "param bf16, compute bf16, grad f32, reduce f32, master f32"
};

// The policy of a config; nd::Error (an input error naming the flags) on a combination that does
// not exist: --grad-dtype other than f32 or bf16, bf16 gradients of f32 parameters, no masters
// beside f32 parameters, --fp8 on other parameters than bf16 or with no --fp8-layers.
PrecisionPolicy precision_policy(const TrainConfig& config);

}  // namespace nd::train

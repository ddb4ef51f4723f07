// PrecisionPolicy from the flags.
#include "train/precision.h"

#include "tensor/error.h"

namespace nd::train {

std::string PrecisionPolicy::str() const {
  std::string s = std::string("param ") + dtype_name(param) + ", compute " + dtype_name(compute) + ", grad " +
                  dtype_name(grad) + ", reduce " + dtype_name(reduce) + ", master " + dtype_name(master);
  if (fp8()) s += std::string(", fp8 GEMMs in") + (fp8_attn ? " attn" : "") + (fp8_mlp ? " mlp" : "") + (fp8_head ? " head" : "");
  if (loss_scaling)
    s += loss_scaler.dynamic ? ", loss scale dynamic" : ", loss scale " + std::to_string(loss_scaler.initial_scale);
  return s;
}

PrecisionPolicy precision_policy(const TrainConfig& c) {
  PrecisionPolicy p;
  p.param = p.compute = c.precision.dtype;
  // fp16 gradients are f32 unless asked: the unscale (x 1/scale) would round the small ones to zero
  // in f16, the very underflow the scale was there to avoid (Megatron's fp16 keeps f32 main_grads).
  const DType default_grad = p.param == DType::F16 ? DType::F32 : p.param;
  p.grad = c.precision.grad_dtype.value_or(default_grad);
  ND_CHECK_INPUT(p.grad == DType::F32 || p.grad == DType::BF16 || p.grad == DType::F16,
                 "--grad-dtype must be f32, bf16 or f16, got '" << dtype_name(p.grad) << "'");
  ND_CHECK_INPUT(p.grad == p.param || p.grad == DType::F32,
                 "--grad-dtype " << dtype_name(p.grad) << " with --dtype " << dtype_flag_name(p.param)
                                 << ": gradients may be as wide as the parameters or f32, not narrower");
  p.reduce = p.grad;
  ND_CHECK_INPUT(c.precision.master_weights || p.param != DType::F32,
                 "--master-weights false needs --dtype bf16 or fp16 (f32 parameters are their own masters)");
  p.master = c.precision.master_weights ? DType::F32 : p.param;
  if (!c.precision.loss_scale) {  // auto
    p.loss_scaling = p.param == DType::F16;
  } else {
    p.loss_scaler = *c.precision.loss_scale;
    p.loss_scaling = p.loss_scaler.dynamic || p.loss_scaler.initial_scale != 1.0;
  }
  if (c.precision.fp8) {
    ND_CHECK_INPUT(p.param == DType::BF16, "--fp8 needs --dtype bf16 (its GEMMs read bf16 and write bf16)");
    p.fp8_attn = c.precision.fp8_layers.attn;
    p.fp8_mlp = c.precision.fp8_layers.mlp;
    p.fp8_head = c.precision.fp8_layers.head;
    ND_CHECK_INPUT(p.fp8(), "--fp8-layers names no layer: '" << fp8_layers_text(c.precision.fp8_layers) << "'");
  }
  return p;
}

}  // namespace nd::train

// PrecisionPolicy from the flags.
#include "train/precision.h"

#include <algorithm>
#include <sstream>

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
  p.param = p.compute = parse_dtype(c.dtype);
  // fp16 gradients are f32 unless asked: the unscale (x 1/scale) would round the small ones to zero
  // in f16, the very underflow the scale was there to avoid (Megatron's fp16 keeps f32 main_grads).
  const DType default_grad = p.param == DType::F16 ? DType::F32 : p.param;
  p.grad = c.grad_dtype.empty() ? default_grad : parse_dtype(c.grad_dtype);
  ND_CHECK_INPUT(p.grad == DType::F32 || p.grad == DType::BF16 || p.grad == DType::F16,
                 "--grad-dtype must be f32, bf16 or f16, got '" << c.grad_dtype << "'");
  ND_CHECK_INPUT(p.grad == p.param || p.grad == DType::F32,
                 "--grad-dtype " << dtype_name(p.grad) << " with --dtype " << c.dtype
                                 << ": gradients may be as wide as the parameters or f32, not narrower");
  p.reduce = p.grad;
  ND_CHECK_INPUT(c.master_weights || p.param != DType::F32,
                 "--master-weights false needs --dtype bf16 or fp16 (f32 parameters are their own masters)");
  p.master = c.master_weights ? DType::F32 : p.param;
  if (c.loss_scale == "auto") {
    p.loss_scaling = p.param == DType::F16;
  } else {
    p.loss_scaler = parse_loss_scale(c.loss_scale);
    p.loss_scaling = p.loss_scaler.dynamic || p.loss_scaler.initial_scale != 1.0;
  }
  if (c.fp8) {
    ND_CHECK_INPUT(p.param == DType::BF16, "--fp8 needs --dtype bf16 (its GEMMs read bf16 and write bf16)");
    std::stringstream list(c.fp8_layers);
    for (std::string item; std::getline(list, item, ',');) {
      const bool all = item == "all";
      ND_CHECK_INPUT(all || item == "attn" || item == "mlp" || item == "head",
                     "--fp8-layers takes all or a comma list of attn, mlp, head; got '" << item << "'");
      p.fp8_attn = p.fp8_attn || all || item == "attn";
      p.fp8_mlp = p.fp8_mlp || all || item == "mlp";
      p.fp8_head = p.fp8_head || all || item == "head";
    }
    ND_CHECK_INPUT(p.fp8(), "--fp8-layers names no layer: '" << c.fp8_layers << "'");
  }
  return p;
}

}  // namespace nd::train

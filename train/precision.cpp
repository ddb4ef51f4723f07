// PrecisionPolicy from the flags.
#include "train/precision.h"

#include "tensor/error.h"

namespace nd::train {

std::string PrecisionPolicy::str() const {
  std::string s = std::string("param ") + dtype_name(param) + ", compute " + dtype_name(compute) + ", grad " +
                  dtype_name(grad) + ", reduce " + dtype_name(reduce) + ", master " + dtype_name(master);
  if (loss_scaling)
    s += loss_scaler.dynamic ? ", loss scale dynamic" : ", loss scale " + std::to_string(loss_scaler.initial_scale);
  return s;
}

PrecisionPolicy precision_policy(const TrainConfig& c) {
  PrecisionPolicy p;
  p.param = p.compute = parse_dtype(c.dtype);
  p.grad = c.grad_dtype.empty() ? p.param : parse_dtype(c.grad_dtype);
  ND_CHECK_INPUT(p.grad == DType::F32 || p.grad == DType::BF16,
                 "--grad-dtype must be f32 or bf16, got '" << c.grad_dtype << "'");
  ND_CHECK_INPUT(p.grad == p.param || p.grad == DType::F32,
                 "--grad-dtype " << dtype_name(p.grad) << " with --dtype " << c.dtype
                                 << ": gradients may be as wide as the parameters or f32, not narrower");
  p.reduce = p.grad;
  ND_CHECK_INPUT(c.master_weights || p.param != DType::F32,
                 "--master-weights false needs --dtype bf16 (f32 parameters are their own masters)");
  p.master = c.master_weights ? DType::F32 : p.param;
  if (c.loss_scale == "auto") {
    p.loss_scaling = c.dtype == "fp16";
  } else {
    p.loss_scaler = parse_loss_scale(c.loss_scale);
    p.loss_scaling = p.loss_scaler.dynamic || p.loss_scaler.initial_scale != 1.0;
  }
  return p;
}

}  // namespace nd::train

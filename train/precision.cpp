// PrecisionPolicy from the flags.
#include "train/precision.h"

#include "tensor/error.h"

namespace nd::train {

std::string PrecisionPolicy::str() const {
  return std::string("param ") + dtype_name(param) + ", compute " + dtype_name(compute) + ", grad " + dtype_name(grad) +
         ", reduce " + dtype_name(reduce) + ", master " + dtype_name(master);
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
  p.master = DType::F32;
  return p;
}

}  // namespace nd::train

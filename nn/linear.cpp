#include "nn/linear.h"

#include "autograd/ops/fp8_linear.h"

namespace nd::nn {

Linear::Linear(const LinearSpec& spec, Generator& gen, Placement at)
    : Linear(spec, normal_shard({spec.out, spec.in}, 0.0, spec.init_std, gen, at, spec.weight_split()),
             spec.bias ? Tensor::zeros({spec.out}, at.dtype, at.device) : Tensor(), 1) {}

Linear::Linear(const LinearSpec& spec, Tensor w, Tensor b, int shards) : spec_(spec) {
  ParamInfo info;
  info.split = spec.weight_split();
  info.shards = shards;
  info.decay = true;
  weight = register_parameter("weight", std::move(w), info);
  if (!b.defined()) return;
  info.split = spec.bias_split();
  info.shards = info.split.sharded() ? shards : 1;
  info.decay = false;
  bias = register_parameter("bias", std::move(b), info);
}

Variable Linear::forward(const Variable& x) const {
  return fp8() ? ops::fp8_linear(x, weight, bias, fp8_scalars_) : ops::linear(x, weight, bias);
}

}  // namespace nd::nn

// ops::layernorm over the last dimension of x (..., C). The forward saves each row's mean and
// rstd (f32, f64 for f64 inputs); backward reads x and w from the inputs plus those two vectors.
#include "autograd/dispatch.h"
#include "autograd/ops.h"
#include "kernels/cpu/layernorm.h"
#include "kernels/cuda/layernorm.h"

namespace nd::ops {

namespace {

struct LayernormDims {
  int64_t N, C;  // rows, channels
};

LayernormDims layernorm_dims(const Tensor& x, const Tensor& w, const Tensor& b) {
  ND_CHECK(x.ndim() >= 1, "layernorm: x must have at least one dimension, got " << x.str());
  const int64_t C = x.size(-1);
  ND_CHECK(w.ndim() == 1 && w.size(0) == C, "layernorm: w " << shape_str(w.shape()) << " does not match x "
                                                            << shape_str(x.shape()) << ": expected [" << C << "]");
  ND_CHECK(b.ndim() == 1 && b.size(0) == C, "layernorm: b " << shape_str(b.shape()) << " does not match x "
                                                            << shape_str(x.shape()) << ": expected [" << C << "]");
  ND_CHECK(w.dtype() == x.dtype() && b.dtype() == x.dtype(),
           "layernorm: x " << x.str() << ", w " << w.str() << " and b " << b.str() << " must share one dtype");
  ND_CHECK(w.device() == x.device() && b.device() == x.device(),
           "layernorm: x " << x.str() << ", w " << w.str() << " and b " << b.str() << " must be on one device");
  return {C == 0 ? 0 : x.numel() / C, C};
}

// What backward reads besides x and w: per-row statistics, each (N), in stat_dtype.
struct LayernormSaved {
  Tensor mean, rstd;
};

}  // namespace

Variable layernorm(const Variable& x, const Variable& w, const Variable& b, float eps) {
  const LayernormDims d = layernorm_dims(x.data(), w.data(), b.data());
  ND_CHECK(eps > 0, "layernorm: eps must be positive, got " << eps);
  const Tensor& xd = x.data();
  Tensor out = Tensor::empty(xd.shape(), xd.dtype(), xd.device());
  const LayernormSaved saved{Tensor::empty({d.N}, stat_dtype(xd.dtype()), xd.device()),
                             Tensor::empty({d.N}, stat_dtype(xd.dtype()), xd.device())};
  ND_DISPATCH_KERNEL(xd, "layernorm",
                     backend::layernorm_forward(xd.data<scalar_t>(), w.data().data<scalar_t>(),
                                                b.data().data<scalar_t>(), out.data<scalar_t>(),
                                                saved.mean.data<StatType<scalar_t>>(),
                                                saved.rstd.data<StatType<scalar_t>>(), d.N, d.C, eps));
  return make_result(out, {x, w, b}, [saved, d](const Tensor& grad_out, std::vector<Variable>& in) {
    const Tensor& x = in[0].data();
    const Tensor& w = in[1].data();
    const GradSlot dx = in[0].grad_slot(), dw = in[1].grad_slot(), db = in[2].grad_slot();
    ND_DISPATCH_KERNEL(x, "layernorm backward",
                       backend::layernorm_backward(grad_out.data<scalar_t>(), x.data<scalar_t>(), w.data<scalar_t>(),
                                                   saved.mean.data<StatType<scalar_t>>(),
                                                   saved.rstd.data<StatType<scalar_t>>(), grad_dest<scalar_t>(dx),
                                                   grad_dest<scalar_t>(dw), grad_dest<scalar_t>(db), d.N, d.C));
  });
}

}  // namespace nd::ops

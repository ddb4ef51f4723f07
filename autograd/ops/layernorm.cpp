// ops::layernorm over the last dimension of x (..., C). The forward saves each row's mean and
// rstd; backward reads x and w from the inputs plus those two vectors.
#include "autograd/dispatch.h"
#include "autograd/ops.h"
#include "kernels/cpu/layernorm.h"
#include "kernels/cuda/dispatch.h"
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

// What backward reads besides x and w: per-row statistics, each (N).
struct LayernormSaved {
  Tensor mean, rstd;
};

// Fills out (N, C) from x (N, C), w, b on x's device and returns the row statistics.
LayernormSaved layernorm_forward_on_device(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& out, float eps,
                                           const LayernormDims& d) {
  if (x.device().is_cuda()) {
    // The statistics stay f32 on the GPU, also for bf16 activations.
    Tensor mean = Tensor::empty({d.N}, DType::F32, x.device());
    Tensor rstd = Tensor::empty({d.N}, DType::F32, x.device());
    ND_DISPATCH_CUDA_FLOAT(
        x.dtype(), "layernorm",
        cuda::layernorm_forward(x.data<scalar_t>(), w.data<scalar_t>(), b.data<scalar_t>(), out.data<scalar_t>(),
                                mean.data<float>(), rstd.data<float>(), d.N, d.C, eps));
    return {mean, rstd};
  }
  Tensor mean = Tensor::empty({d.N}, x.dtype(), x.device());
  Tensor rstd = Tensor::empty({d.N}, x.dtype(), x.device());
  ND_DISPATCH_CPU_FLOAT(
      x.dtype(), "layernorm",
      cpu::layernorm_forward(x.data<scalar_t>(), w.data<scalar_t>(), b.data<scalar_t>(), out.data<scalar_t>(),
                             mean.data<scalar_t>(), rstd.data<scalar_t>(), d.N, d.C, static_cast<scalar_t>(eps)));
  return {mean, rstd};
}

// Adds into whichever of dx (N, C), dw (C), db (C) is non-null.
void layernorm_backward_on_device(const Tensor& dout, const Tensor& x, const Tensor& w, const LayernormSaved& saved,
                                  Tensor* dx, Tensor* dw, Tensor* db, const LayernormDims& d) {
  if (x.device().is_cuda()) {
    ND_DISPATCH_CUDA_FLOAT(x.dtype(), "layernorm backward",
                           cuda::layernorm_backward(
                               dout.data<scalar_t>(), x.data<scalar_t>(), w.data<scalar_t>(), saved.mean.data<float>(),
                               saved.rstd.data<float>(), dx ? dx->data<scalar_t>() : nullptr,
                               dw ? dw->data<scalar_t>() : nullptr, db ? db->data<scalar_t>() : nullptr, d.N, d.C));
    return;
  }
  ND_DISPATCH_CPU_FLOAT(x.dtype(), "layernorm backward",
                        cpu::layernorm_backward(
                            dout.data<scalar_t>(), x.data<scalar_t>(), w.data<scalar_t>(), saved.mean.data<scalar_t>(),
                            saved.rstd.data<scalar_t>(), dx ? dx->data<scalar_t>() : nullptr,
                            dw ? dw->data<scalar_t>() : nullptr, db ? db->data<scalar_t>() : nullptr, d.N, d.C));
}

}  // namespace

Variable layernorm(const Variable& x, const Variable& w, const Variable& b, float eps) {
  const LayernormDims d = layernorm_dims(x.data(), w.data(), b.data());
  ND_CHECK(eps > 0, "layernorm: eps must be positive, got " << eps);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  LayernormSaved saved = layernorm_forward_on_device(x.data(), w.data(), b.data(), out, eps, d);
  return make_result(out, {x, w, b}, [saved, d](const Tensor& grad_out, std::vector<Variable>& in) {
    Tensor* dx = in[0].requires_grad() ? &in[0].grad_buffer() : nullptr;
    Tensor* dw = in[1].requires_grad() ? &in[1].grad_buffer() : nullptr;
    Tensor* db = in[2].requires_grad() ? &in[2].grad_buffer() : nullptr;
    layernorm_backward_on_device(grad_out, in[0].data(), in[1].data(), saved, dx, dw, db, d);
  });
}

}  // namespace nd::ops

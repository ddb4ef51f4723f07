// ops::dropout: inverted dropout whose mask is a function of Philox counters. The forward
// reserves numel counters from the generator; the closure keeps (seed, first, stream, p) and
// backward recomputes the same mask instead of storing it.
#include "autograd/dispatch.h"
#include "autograd/ops.h"
#include "kernels/cpu/dropout.h"
#include "kernels/cuda/dispatch.h"
#include "kernels/cuda/dropout.h"

namespace nd::ops {

namespace {

// Which counters a call used: element i's draw is philox_uniform(seed, first + i, stream).
struct DropoutDraw {
  float p;
  uint64_t seed, first, stream;
};

void dropout_forward_on_device(const Tensor& x, Tensor& out, const DropoutDraw& r) {
  if (x.device().is_cuda()) {
    ND_DISPATCH_CUDA_FLOAT(
        x.dtype(), "dropout",
        cuda::dropout_forward(x.data<scalar_t>(), out.data<scalar_t>(), x.numel(), r.p, r.seed, r.first, r.stream));
    return;
  }
  ND_DISPATCH_CPU_FLOAT(
      x.dtype(), "dropout",
      cpu::dropout_forward(x.data<scalar_t>(), out.data<scalar_t>(), x.numel(), r.p, r.seed, r.first, r.stream));
}

// dx += mask * dout / (1 - p).
void dropout_backward_on_device(const Tensor& dout, Tensor& dx, const DropoutDraw& r) {
  if (dout.device().is_cuda()) {
    ND_DISPATCH_CUDA_FLOAT(dout.dtype(), "dropout backward",
                           cuda::dropout_backward(dout.data<scalar_t>(), dx.data<scalar_t>(), dout.numel(), r.p, r.seed,
                                                  r.first, r.stream));
    return;
  }
  ND_DISPATCH_CPU_FLOAT(
      dout.dtype(), "dropout backward",
      cpu::dropout_backward(dout.data<scalar_t>(), dx.data<scalar_t>(), dout.numel(), r.p, r.seed, r.first, r.stream));
}

}  // namespace

Variable dropout(const Variable& x, float p, Generator& gen, bool training) {
  ND_CHECK(p >= 0.0f && p <= 1.0f, "dropout: p must lie in [0, 1], got " << p << " for x " << x.data().str());
  if (!training || p == 0.0f) return x;
  const DropoutDraw draw{p, gen.seed(), gen.advance(static_cast<uint64_t>(x.data().numel())), gen.stream()};
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  dropout_forward_on_device(x.data(), out, draw);
  return make_result(out, {x}, [draw](const Tensor& grad_out, std::vector<Variable>& in) {
    if (in[0].requires_grad()) dropout_backward_on_device(grad_out, in[0].grad_buffer(), draw);
  });
}

}  // namespace nd::ops

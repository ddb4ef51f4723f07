// ops::gelu (GPT-2's tanh form), elementwise on any shape; backward reads x from the input.
#include "autograd/dispatch.h"
#include "autograd/ops.h"
#include "kernels/cpu/gelu.h"
#include "kernels/cuda/dispatch.h"
#include "kernels/cuda/gelu.h"

namespace nd::ops {

namespace {

void gelu_forward_on_device(const Tensor& x, Tensor& out) {
  if (x.device().is_cuda()) {
    ND_DISPATCH_CUDA_FLOAT(x.dtype(), "gelu", cuda::gelu_forward(x.data<scalar_t>(), out.data<scalar_t>(), x.numel()));
    return;
  }
  ND_DISPATCH_CPU_FLOAT(x.dtype(), "gelu", cpu::gelu_forward(x.data<scalar_t>(), out.data<scalar_t>(), x.numel()));
}

// dx += gelu'(x) * dout.
void gelu_backward_on_device(const Tensor& dout, const Tensor& x, Tensor& dx) {
  if (x.device().is_cuda()) {
    ND_DISPATCH_CUDA_FLOAT(
        x.dtype(), "gelu backward",
        cuda::gelu_backward(dout.data<scalar_t>(), x.data<scalar_t>(), dx.data<scalar_t>(), x.numel()));
    return;
  }
  ND_DISPATCH_CPU_FLOAT(x.dtype(), "gelu backward",
                        cpu::gelu_backward(x.data<scalar_t>(), dout.data<scalar_t>(), dx.data<scalar_t>(), x.numel()));
}

}  // namespace

Variable gelu(const Variable& x) {
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  gelu_forward_on_device(x.data(), out);
  return make_result(out, {x}, [](const Tensor& grad_out, std::vector<Variable>& in) {
    if (in[0].requires_grad()) gelu_backward_on_device(grad_out, in[0].data(), in[0].grad_buffer());
  });
}

}  // namespace nd::ops

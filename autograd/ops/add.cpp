// ops::add: a + b of one shape (the residual connection). Backward passes the gradient through
// to both inputs unchanged, so the closure keeps nothing.
#include "autograd/dispatch.h"
#include "autograd/ops.h"
#include "kernels/cpu/add.h"
#include "kernels/cuda/add.h"
#include "kernels/cuda/dispatch.h"

namespace nd::ops {

namespace {

void add_forward_on_device(const Tensor& a, const Tensor& b, Tensor& out) {
  if (a.device().is_cuda()) {
    ND_DISPATCH_CUDA_FLOAT(a.dtype(), "add",
                           cuda::add_forward(a.data<scalar_t>(), b.data<scalar_t>(), out.data<scalar_t>(), a.numel()));
    return;
  }
  ND_DISPATCH_CPU_FLOAT(a.dtype(), "add",
                        cpu::add_forward(a.data<scalar_t>(), b.data<scalar_t>(), out.data<scalar_t>(), a.numel()));
}

// grad += dout.
void add_backward_on_device(const Tensor& dout, Tensor& grad) {
  if (dout.device().is_cuda()) {
    ND_DISPATCH_CUDA_FLOAT(dout.dtype(), "add backward",
                           cuda::accumulate(grad.data<scalar_t>(), dout.data<scalar_t>(), dout.numel()));
    return;
  }
  ND_DISPATCH_CPU_FLOAT(dout.dtype(), "add backward",
                        cpu::add_inplace(grad.data<scalar_t>(), dout.data<scalar_t>(), dout.numel()));
}

}  // namespace

Variable add(const Variable& a, const Variable& b) {
  ND_CHECK(a.shape() == b.shape(),
           "add: shapes " << shape_str(a.shape()) << " and " << shape_str(b.shape()) << " differ");
  ND_CHECK(a.dtype() == b.dtype(), "add: a " << a.data().str() << " and b " << b.data().str() << " differ in dtype");
  ND_CHECK(a.device() == b.device(),
           "add: a " << a.data().str() << " and b " << b.data().str() << " are on different devices");
  Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
  add_forward_on_device(a.data(), b.data(), out);
  return make_result(out, {a, b}, [](const Tensor& grad_out, std::vector<Variable>& in) {
    for (Variable& v : in)
      if (v.requires_grad()) add_backward_on_device(grad_out, v.grad_buffer());
  });
}

}  // namespace nd::ops

// ops::gelu (GPT-2's tanh form), elementwise on any shape; backward reads x from the input.
#include "autograd/dispatch.h"
#include "autograd/ops.h"
#include "kernels/cpu/gelu.h"
#include "kernels/cuda/gelu.h"

namespace nd::ops {

Variable gelu(const Variable& x) {
  const Tensor& xd = x.data();
  Tensor out = Tensor::empty(xd.shape(), xd.dtype(), xd.device());
  ND_DISPATCH_KERNEL(xd, "gelu", backend::gelu_forward(xd.data<scalar_t>(), out.data<scalar_t>(), xd.numel()));
  return make_result(out, {x}, [](const Tensor& grad_out, std::vector<Variable>& in) {
    const Tensor& x = in[0].data();
    const GradSlot dx = in[0].grad_slot();
    ND_DISPATCH_KERNEL(x, "gelu backward",
                       backend::gelu_backward(x.data<scalar_t>(), grad_out.data<scalar_t>(), grad_dest<scalar_t>(dx),
                                              x.numel()));
  });
}

}  // namespace nd::ops

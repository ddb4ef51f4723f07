// ops::add: a + b of one shape (the residual connection). Backward passes the gradient through
// to both inputs unchanged, so the closure keeps nothing.
#include "autograd/dispatch.h"
#include "autograd/ops.h"
#include "kernels/cpu/add.h"
#include "kernels/cuda/add.h"

namespace nd::ops {

Variable add(const Variable& a, const Variable& b) {
  ND_CHECK(a.shape() == b.shape(),
           "add: shapes " << shape_str(a.shape()) << " and " << shape_str(b.shape()) << " differ");
  ND_CHECK(a.dtype() == b.dtype(), "add: a " << a.data().str() << " and b " << b.data().str() << " differ in dtype");
  ND_CHECK(a.device() == b.device(),
           "add: a " << a.data().str() << " and b " << b.data().str() << " are on different devices");
  Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
  ND_DISPATCH_KERNEL(out, "add",
                     backend::add_forward(a.data().data<scalar_t>(), b.data().data<scalar_t>(),
                                          out.data<scalar_t>(), out.numel()));
  return make_result(out, {a, b}, [](const Tensor& grad_out, std::vector<Variable>& in) {
    // Slots taken in order: for a + a the second one adds to what the first wrote.
    const GradSlot da = in[0].grad_slot();
    const GradSlot db = in[1].grad_slot();
    ND_DISPATCH_KERNEL(grad_out, "add backward",
                       backend::add_backward(grad_out.data<scalar_t>(), grad_dest<scalar_t>(da),
                                             grad_dest<scalar_t>(db), grad_out.numel()));
  });
}

}  // namespace nd::ops

// ops::on_backward: an identity node (it shares x's value) whose backward calls the hook, then
// passes the gradient on without a copy.
#include "autograd/backward_hook.h"

#include "autograd/parallel_ops.h"

namespace nd::ops {

Variable on_backward(const Variable& x, std::function<void()> fn) {
  if (!grad_enabled() || !x.requires_grad()) return x;
  return make_result(x.data(), {x.without_data()}, [fn](const Tensor& grad_out, std::vector<Variable>& in) {
    fn();
    pass_gradient(grad_out, in[0]);
  });
}

}  // namespace nd::ops

#include "autograd/variable.h"

namespace nd {

namespace {
thread_local bool g_grad_enabled = true;
}

bool grad_enabled() { return g_grad_enabled; }
NoGradGuard::NoGradGuard() : previous_(g_grad_enabled) { g_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { g_grad_enabled = previous_; }

Variable::Variable(Tensor data, bool requires_grad) : impl_(std::make_shared<VariableImpl>()) {
  impl_->data = std::move(data);
  impl_->requires_grad = requires_grad;
}

const Tensor& Variable::data() const {
  ND_CHECK(impl_, "use of an undefined Variable");
  return impl_->data;
}

Tensor& Variable::data() {
  ND_CHECK(impl_, "use of an undefined Variable");
  return impl_->data;
}

void Variable::set_requires_grad(bool value) {
  ND_CHECK(impl_, "use of an undefined Variable");
  ND_CHECK(is_leaf() || value, "cannot stop gradients of a non-leaf Variable in place");
  impl_->requires_grad = value;
}

const std::shared_ptr<Node>& Variable::grad_fn() const {
  ND_CHECK(impl_, "use of an undefined Variable");
  return impl_->grad_fn;
}

const Tensor& Variable::grad() const {
  ND_CHECK(has_grad(), "Variable " << data().str() << " has no gradient");
  if (impl_->grad_stale) {
    impl_->grad.zero_();
    impl_->grad_stale = false;
  }
  return impl_->grad;
}

GradSlot Variable::grad_slot() {
  if (!requires_grad()) return {};
  if (!impl_->grad.defined()) {
    impl_->grad = Tensor::empty(impl_->data.shape(), impl_->data.dtype(), impl_->data.device());
    impl_->grad_stale = true;
  }
  GradSlot slot{impl_->grad, !impl_->grad_stale};
  impl_->grad_stale = false;
  return slot;
}

void Variable::zero_grad() {
  if (has_grad()) impl_->grad_stale = true;
}

void Variable::clear_grad() {
  if (impl_) {
    impl_->grad = Tensor();
    impl_->grad_stale = false;
  }
}

void Variable::set_grad(Tensor grad) {
  ND_CHECK(impl_, "use of an undefined Variable");
  check_same_shape(grad, impl_->data, "set_grad: gradient and parameter");
  check_dtype(grad, impl_->data.dtype(), "set_grad: gradient");
  check_device(grad, impl_->data.device(), "set_grad: gradient");
  impl_->grad = std::move(grad);
  impl_->grad_stale = false;
}

void Variable::set_grad_hook(std::function<void(Variable&)> hook) {
  ND_CHECK(impl_, "use of an undefined Variable");
  impl_->grad_hook = std::move(hook);
}

void Variable::backward() {
  ND_CHECK(data().numel() == 1, "backward() without a gradient needs a scalar, got " << data().str());
  backward(Tensor::ones(data().shape(), data().dtype(), data().device()));
}

Variable make_result(Tensor out, std::vector<Variable> inputs,
                     std::function<void(const Tensor&, std::vector<Variable>&)> backward) {
  Variable result(std::move(out), false);
  if (!grad_enabled()) return result;
  bool any = false;
  for (const Variable& v : inputs) any = any || v.requires_grad();
  if (!any) return result;
  auto node = std::make_shared<Node>();
  node->inputs = std::move(inputs);
  node->backward = std::move(backward);
  result.impl_->requires_grad = true;
  result.impl_->grad_fn = std::move(node);
  return result;
}

}  // namespace nd

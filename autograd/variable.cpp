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
  impl_->autograd->requires_grad = requires_grad;
}

namespace {

// The value of `impl`, which must be a Variable's and not a graph edge's.
Tensor& value_of(VariableImpl* impl) {
  ND_CHECK(impl, "use of an undefined Variable");
  ND_CHECK(!impl->edge, "read of the value " << shape_str(impl->edge->shape)
                                             << " through a graph edge: the op kept this input without_data(), "
                                                "so its backward must not read it, or recorded it without its "
                                                "forward (autograd/without_forward.h), so nothing may read it");
  return impl->data;
}

}  // namespace

const Tensor& Variable::data() const { return value_of(impl_.get()); }
Tensor& Variable::data() { return value_of(impl_.get()); }

const Shape& Variable::shape() const { return impl_ && impl_->edge ? impl_->edge->shape : data().shape(); }
Device Variable::device() const { return impl_ && impl_->edge ? impl_->edge->device : data().device(); }
DType Variable::dtype() const { return impl_ && impl_->edge ? impl_->edge->dtype : data().dtype(); }

Variable Variable::without_data() const {
  if (is_leaf() || impl_->edge) return *this;
  Variable edge;
  edge.impl_ = std::make_shared<VariableImpl>();
  edge.impl_->autograd = impl_->autograd;
  edge.impl_->edge = ValueInfo{impl_->data.shape(), impl_->data.dtype(), impl_->data.device()};
  return edge;
}

const std::shared_ptr<Node>& Variable::grad_fn() const {
  ND_CHECK(impl_, "use of an undefined Variable");
  return impl_->autograd->grad_fn;
}

const Tensor& Variable::grad() const {
  ND_CHECK(has_grad(), "Variable of shape " << shape_str(shape()) << " has no gradient");
  AutogradState& a = *impl_->autograd;
  if (a.grad_stale) {
    a.grad.zero_();
    a.grad_stale = false;
  }
  return a.grad;
}

GradSlot Variable::grad_slot() {
  if (!requires_grad()) return {};
  AutogradState& a = *impl_->autograd;
  if (!a.grad.defined()) {
    a.grad = Tensor::empty(shape(), dtype(), device());
    a.grad_stale = true;
  }
  GradSlot slot{a.grad, !a.grad_stale};
  a.grad_stale = false;
  return slot;
}

void Variable::zero_grad() {
  if (has_grad()) impl_->autograd->grad_stale = true;
}

void Variable::clear_grad() {
  if (impl_) {
    impl_->autograd->grad = Tensor();
    impl_->autograd->grad_stale = false;
  }
}

void Variable::set_grad(Tensor grad) {
  ND_CHECK(impl_, "use of an undefined Variable");
  check_same_shape(grad, data(), "set_grad: gradient and parameter");
  check_dtype(grad, dtype(), "set_grad: gradient");
  check_device(grad, device(), "set_grad: gradient");
  impl_->autograd->grad = std::move(grad);
  impl_->autograd->grad_stale = false;
}

void Variable::set_grad_hook(std::function<void(Variable&)> hook) {
  ND_CHECK(impl_, "use of an undefined Variable");
  impl_->autograd->grad_hook = std::move(hook);
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
  result.impl_->autograd->requires_grad = true;
  result.impl_->autograd->grad_fn = std::move(node);
  return result;
}

}  // namespace nd

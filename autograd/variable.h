// Variable: a tensor that takes part in automatic differentiation. A Variable made by an op holds
// the Node that made it; the Node holds its inputs and a backward closure that keeps only what
// backward reads. Leaves (parameters) accumulate .grad and can carry a hook that fires once their
// gradient is final in a backward pass (DDP starts a bucket's all-reduce from it).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace nd {

class Variable;
struct Node;

struct VariableImpl {
  Tensor data;
  Tensor grad;
  bool requires_grad = false;
  std::shared_ptr<Node> grad_fn;
  std::function<void(Variable&)> grad_hook;
};

class Variable {
 public:
  Variable() = default;
  explicit Variable(Tensor data, bool requires_grad = false);

  bool defined() const { return impl_ != nullptr; }
  const Tensor& data() const;
  Tensor& data();
  const Shape& shape() const { return data().shape(); }
  Device device() const { return data().device(); }
  DType dtype() const { return data().dtype(); }

  bool requires_grad() const { return impl_ && impl_->requires_grad; }
  void set_requires_grad(bool value);
  bool is_leaf() const { return !impl_ || impl_->grad_fn == nullptr; }
  const std::shared_ptr<Node>& grad_fn() const;

  bool has_grad() const { return impl_ && impl_->grad.defined(); }
  const Tensor& grad() const;
  // The gradient buffer, created as zeros on first use: backward kernels add into it (+=).
  Tensor& grad_buffer();
  // Zeroes the gradient in place (the buffer is kept: no allocation in the steady state).
  void zero_grad();
  // Drops the gradient buffer.
  void clear_grad();
  // Makes `grad` (same shape, dtype, device; e.g. a view into a DDP bucket) the gradient
  // buffer that backward accumulates into.
  void set_grad(Tensor grad);

  void set_grad_hook(std::function<void(Variable&)> hook);

  // Backpropagates from this scalar (gradient 1) or from `grad_output` (same shape as data).
  void backward();
  void backward(const Tensor& grad_output);

  VariableImpl* impl() const { return impl_.get(); }
  bool same(const Variable& other) const { return impl_ == other.impl_; }

 private:
  friend Variable make_result(Tensor, std::vector<Variable>, std::function<void(const Tensor&, std::vector<Variable>&)>);
  std::shared_ptr<VariableImpl> impl_;
};

// One recorded op. `backward(grad_out, inputs)` adds into `inputs[i].grad_buffer()` for each
// input that requires grad.
struct Node {
  std::vector<Variable> inputs;
  std::function<void(const Tensor& grad_out, std::vector<Variable>& inputs)> backward;
};

// Wraps an op's output: records a Node when grad mode is on and any input requires grad.
Variable make_result(Tensor out, std::vector<Variable> inputs,
                     std::function<void(const Tensor& grad_out, std::vector<Variable>& inputs)> backward);

// Grad mode: on by default; a NoGradGuard turns recording off in its scope (evaluation, sampling).
bool grad_enabled();
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace nd

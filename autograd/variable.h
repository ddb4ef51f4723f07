// Variable: a tensor that takes part in automatic differentiation. A Variable made by an op holds
// the Node that made it; the Node holds its inputs and a backward closure that keeps only what
// backward reads. Leaves (parameters) accumulate .grad and can carry a hook that fires once their
// gradient is final in a backward pass (DDP starts a bucket's all-reduce from it). The first
// contribution to a gradient is written into its buffer, later ones are added: no buffer is
// zero-filled just to be added to.
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
  // The buffer's contents are not a gradient (made uninitialised, or zero_grad() since): the next
  // contribution overwrites them, and a read before that sees zeros.
  bool grad_stale = false;
  bool requires_grad = false;
  std::shared_ptr<Node> grad_fn;
  std::function<void(Variable&)> grad_hook;
};

// Where one backward contribution to a gradient goes: the buffer (undefined: the gradient is not
// wanted) and whether to add to it (false: overwrite every element, the buffer may hold garbage).
struct GradSlot {
  Tensor buffer;
  bool accumulate = false;
  bool wanted() const { return buffer.defined(); }
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
  // The gradient; zeros when nothing was contributed since zero_grad() (filled in on this read, on
  // the buffer's device: an unused parameter reads as zero, as if it had been zeroed).
  const Tensor& grad() const;
  // The slot of the next backward contribution: the buffer (made uninitialised on first use) and
  // accumulate = false for the first contribution since the buffer was made or zero_grad(), true
  // after. Taking the slot counts as contributing: the caller's kernel must write it. Empty when
  // this Variable does not require grad.
  GradSlot grad_slot();
  // Resets the gradient to zero without touching memory: the buffer is kept (no allocation in the
  // steady state) and the next contribution overwrites it. The same sequence of calls every step,
  // so a step stays capturable in a CUDA graph.
  void zero_grad();
  // Drops the gradient buffer.
  void clear_grad();
  // Makes `grad` (same shape, dtype, device; e.g. a view into a DDP bucket) the gradient buffer,
  // holding its current contents as the gradient; backward writes and adds into it in place.
  void set_grad(Tensor grad);

  void set_grad_hook(std::function<void(Variable&)> hook);

  // Backpropagates from this scalar (gradient 1) or from `grad_output` (same shape as data; copied
  // unless this Variable's node only reads it, see Node::only_reads_grad_out).
  void backward();
  void backward(const Tensor& grad_output);

  VariableImpl* impl() const { return impl_.get(); }
  bool same(const Variable& other) const { return impl_ == other.impl_; }

 private:
  friend Variable make_result(Tensor, std::vector<Variable>, std::function<void(const Tensor&, std::vector<Variable>&)>);
  std::shared_ptr<VariableImpl> impl_;
};

// One recorded op. `backward(grad_out, inputs)` contributes to `inputs[i].grad_slot()` for each
// input that requires grad.
struct Node {
  std::vector<Variable> inputs;
  std::function<void(const Tensor& grad_out, std::vector<Variable>& inputs)> backward;
  // The closure only reads grad_out: it neither keeps it nor hands its buffer over as a gradient.
  // backward(grad_output) from this node's output then passes the caller's tensor itself, not a
  // copy, so the closure can tell which tensor it was called with (ops::LossGradient).
  bool only_reads_grad_out = false;
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

// Variable: a tensor that takes part in automatic differentiation. A Variable made by an op holds
// the Node that made it; the Node holds its inputs and a backward closure that keeps only what
// backward reads (an input whose value backward does not read is held as a graph edge, without
// its value: Variable::without_data). Leaves (parameters) accumulate .grad and can carry a hook that fires once their
// gradient is final in a backward pass (DDP starts a bucket's all-reduce from it). The first
// contribution to a gradient is written into its buffer, later ones are added: no buffer is
// zero-filled just to be added to.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace nd {

class Variable;
struct Node;

// What the graph needs of a Variable: its gradient and the node that made it. Every handle of
// the Variable shares it, including graph edges that do not keep the value (without_data()).
struct AutogradState {
  Tensor grad;
  // The buffer's contents are not a gradient (made uninitialised, or zero_grad() since): the next
  // contribution overwrites them, and a read before that sees zeros.
  bool grad_stale = false;
  bool requires_grad = false;
  std::shared_ptr<Node> grad_fn;
  std::function<void(Variable&)> grad_hook;
};

// The value's shape, dtype and device, which a graph edge keeps instead of the value: enough to
// make the gradient buffer.
struct ValueInfo {
  Shape shape;
  DType dtype = DType::F32;
  Device device;
};

struct VariableImpl {
  Tensor data;  // undefined in a graph edge
  std::shared_ptr<AutogradState> autograd = std::make_shared<AutogradState>();
  std::optional<ValueInfo> edge;  // set in a graph edge only
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
  const Shape& shape() const;
  Device device() const;
  DType dtype() const;

  bool requires_grad() const { return impl_ && impl_->autograd->requires_grad; }
  bool is_leaf() const { return !impl_ || impl_->autograd->grad_fn == nullptr; }
  const std::shared_ptr<Node>& grad_fn() const;

  bool has_grad() const { return impl_ && impl_->autograd->grad.defined(); }
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

  // This Variable as an op's node keeps an input whose value its backward does not read: the same
  // gradient and producer (the graph is unchanged), without holding the value, which is freed
  // once its other holders let go (a residual add's or a dropout's input need not live until
  // backward). data() of the result is an error; shape(), dtype() and device() still answer. A
  // leaf is returned as it is: its owner keeps its value anyway, and hooks receive the leaf.
  Variable without_data() const;

  VariableImpl* impl() const { return impl_.get(); }
  AutogradState* autograd() const { return impl_ ? impl_->autograd.get() : nullptr; }
  // The same Variable: one autograd state (a graph edge of a Variable is the same as it).
  bool same(const Variable& other) const { return autograd() == other.autograd(); }

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

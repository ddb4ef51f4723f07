// The backward engine: orders the recorded graph topologically, runs each node's closure from
// the output back to the leaves, and fires a leaf's hook right after its last consumer ran.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "autograd/variable.h"

namespace nd {

namespace {

// Non-leaf variables in post-order: every variable comes after all the variables it was made from.
std::vector<Variable> topological_order(const Variable& root) {
  std::vector<Variable> order;
  std::unordered_set<AutogradState*> seen;  // by state: a graph edge is the Variable it stands for
  struct Frame {
    Variable var;
    size_t next_input;
  };
  std::vector<Frame> stack;
  if (root.is_leaf()) return order;
  stack.push_back({root, 0});
  seen.insert(root.autograd());
  while (!stack.empty()) {
    Frame& top = stack.back();
    const auto& node = top.var.grad_fn();
    ND_CHECK(node->backward, "backward through a graph that was already freed by an earlier backward()");
    if (top.next_input < node->inputs.size()) {
      const Variable& in = node->inputs[top.next_input++];
      if (in.requires_grad() && !in.is_leaf() && seen.insert(in.autograd()).second) stack.push_back({in, 0});
    } else {
      order.push_back(top.var);
      stack.pop_back();
    }
  }
  return order;
}

void fire_hook(Variable& leaf) {
  if (leaf.autograd()->grad_hook) leaf.autograd()->grad_hook(leaf);
}

}  // namespace

void Variable::backward(const Tensor& grad_output) {
  ND_CHECK(requires_grad(), "backward() on a Variable that does not require grad");
  // By shape and dtype, not value: an output recorded without its forward has none.
  ND_CHECK(grad_output.shape() == shape(), "backward(): gradient and output: shapes "
                                               << shape_str(grad_output.shape()) << " and " << shape_str(shape())
                                               << " differ");
  check_dtype(grad_output, dtype(), "backward(): gradient");

  std::vector<Variable> order = topological_order(*this);

  // How many recorded uses each leaf has: its gradient is final once all of them have run.
  std::unordered_map<AutogradState*, int> pending_uses;
  for (const Variable& v : order)
    for (const Variable& in : v.grad_fn()->inputs)
      if (in.requires_grad() && in.is_leaf()) ++pending_uses[in.autograd()];

  ND_CHECK(!(is_leaf() && has_grad()),
           "backward() from a leaf that already holds a gradient; call clear_grad() first");
  // A copy, which a node may take over as its input's gradient, unless the node only reads it.
  const bool borrow = !is_leaf() && grad_fn()->only_reads_grad_out;
  impl_->autograd->grad = borrow ? grad_output : grad_output.clone();
  impl_->autograd->grad_stale = false;
  if (is_leaf()) {
    fire_hook(*this);
    return;
  }

  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Variable& v = *it;
    Node& node = *v.grad_fn();
    node.backward(v.grad(), node.inputs);
    for (Variable& in : node.inputs)
      if (in.requires_grad() && in.is_leaf() && --pending_uses[in.autograd()] == 0) fire_hook(in);
    // Free as we go: the intermediate gradient and everything the closure saved.
    v.autograd()->grad = Tensor();
    node.inputs.clear();
    node.backward = nullptr;
  }
}

}  // namespace nd

// Ops recorded without their forward: inside a WithoutForward scope an op whose output nobody reads
// (the last ops of a recomputed region's rerun, whose gradients backward needs but whose values it
// does not) records its node exactly as it would otherwise, keeping what its backward reads, but
// skips computing its output, which is left unallocated. Implementation: without_forward.cpp.
#pragma once
#include <functional>
#include <vector>

#include "autograd/variable.h"

namespace nd {

// True inside a WithoutForward scope: the op running now may record its node without computing its
// output (make_result_without_value). An op that does not honour it computes its output as always;
// an op that needs a value that was skipped fails on reading it (nd::Error), never reads garbage.
// Ops that honour it: ops::linear, add, add_bias, with_bias_gradient, dropout, dropout_share,
// gelu_mlp, fp8_linear, fp8_gelu_mlp, scattered_linear, and dist's reduce_from_tp and
// reduce_scatter_to_sp (whose forward collective is then skipped on every rank alike; backward's
// collectives run as always). Each still draws the random counters and computes the saved
// tensors (a GEMM's input codes, a GELU's input) its backward reads.
bool forward_skipped();

// Turns forward skipping on (or leaves it as it is, with active = false) for its lifetime.
class WithoutForward {
 public:
  explicit WithoutForward(bool active = true);
  ~WithoutForward();
  WithoutForward(const WithoutForward&) = delete;
  WithoutForward& operator=(const WithoutForward&) = delete;

 private:
  bool previous_;
};

// An op's result whose value was not computed: recorded as make_result records it, with the shape,
// dtype and device `info` gives; reading its value is an nd::Error (Variable::data), its gradient
// is an ordinary one.
Variable make_result_without_value(const ValueInfo& info, std::vector<Variable> inputs,
                                   std::function<void(const Tensor& grad_out, std::vector<Variable>& inputs)> backward);

}  // namespace nd

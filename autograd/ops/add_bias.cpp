// ops::add_bias and ops::add_positions: a row vector broadcast over rows (kernels/*/bias_add.*);
// ops::with_bias_gradient: only add_bias's backward, for a bias another rank added.
// The position embedding is the same thing with rows of T * C elements: x (B, T*C) + wpe[:T]
// flattened. Backward passes the gradient through to x and sums it over rows into the vector.
#include "autograd/dispatch.h"
#include "autograd/parallel_ops.h"
#include "autograd/without_forward.h"
#include "kernels/cpu/add.h"
#include "kernels/cpu/bias_add.h"
#include "kernels/cuda/add.h"
#include "kernels/cuda/bias_add.h"

namespace nd::ops {

namespace {

// out (M, N) = x + the first N elements of b, b contiguous.
void bias_add_forward_on_device(const Tensor& x, const Tensor& b, Tensor& out, int64_t M, int64_t N) {
  ND_DISPATCH_KERNEL(x, "add_bias",
                     backend::bias_add_forward(x.data<scalar_t>(), b.data<scalar_t>(), out.data<scalar_t>(), M, N));
}

// The first N elements of db += column sums of dout (M, N).
void bias_add_backward_on_device(const Tensor& dout, const Tensor& db, int64_t M, int64_t N) {
  ND_DISPATCH_KERNEL(dout, "add_bias backward",
                     backend::bias_add_backward(dout.data<scalar_t>(), db.data<scalar_t>(), M, N));
}

void check_same_placement(const Variable& x, const Tensor& b, const char* what) {
  ND_CHECK(b.dtype() == x.dtype(),
           what << ": " << b.str() << " and x " << shape_str(x.shape()) << " " << dtype_name(x.dtype())
                << " differ in dtype");
  ND_CHECK(b.device() == x.device(), what << ": " << b.str() << " and x " << shape_str(x.shape()) << " "
                                          << dtype_name(x.dtype()) << " are on different devices");
}

// Backward of x + b broadcast over M rows of N elements: dx passed through, db the column sums.
std::function<void(const Tensor&, std::vector<Variable>&)> broadcast_add_backward(int64_t M, int64_t N) {
  return [M, N](const Tensor& grad_out, std::vector<Variable>& in) {
    if (in[1].requires_grad()) bias_add_backward_on_device(grad_out, accumulating_grad(in[1]), M, N);
    if (in[0].requires_grad()) pass_gradient(grad_out, in[0]);
  };
}

// out = x + b broadcast over M rows of N elements; b's first N elements are the vector. Without its
// forward (autograd/without_forward.h) no sum is written: backward reads neither value.
Variable broadcast_add(const Variable& x, const Variable& b, int64_t M, int64_t N) {
  if (forward_skipped())
    return make_result_without_value({x.shape(), x.dtype(), x.device()}, {x.without_data(), b},
                                     broadcast_add_backward(M, N));
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  bias_add_forward_on_device(x.data(), b.data(), out, M, N);
  return make_result(out, {x.without_data(), b}, broadcast_add_backward(M, N));
}

}  // namespace

void pass_gradient(const Tensor& dout, Variable& in) {
  if (!in.is_leaf() && !in.has_grad()) {
    in.autograd()->grad = dout;
    return;
  }
  // add's backward with one destination: written on the first contribution, added on later ones.
  const GradSlot slot = in.grad_slot();
  ND_DISPATCH_KERNEL(
      dout, "gradient accumulation",
      backend::add_backward(dout.data<scalar_t>(), grad_dest<scalar_t>(slot), GradDest<scalar_t>{}, dout.numel()));
}

Tensor accumulating_grad(Variable& v) {
  GradSlot slot = v.grad_slot();
  if (!slot.accumulate) slot.buffer.zero_();
  return slot.buffer;
}

Variable add_bias(const Variable& x, const Variable& b) {
  // x by its shape, dtype and device: recorded without its forward, x may have no value.
  ND_CHECK(!x.shape().empty(), "add_bias: x must have at least one dimension, got " << shape_str(x.shape()));
  const int64_t N = x.shape().back();
  ND_CHECK(b.data().ndim() == 1 && b.shape()[0] == N, "add_bias: b " << shape_str(b.shape()) << " does not match x "
                                                                     << shape_str(x.shape()) << ": expected [" << N
                                                                     << "]");
  check_same_placement(x, b.data(), "add_bias: b");
  return broadcast_add(x, b, N == 0 ? 0 : shape_numel(x.shape()) / N, N);
}

Variable with_bias_gradient(const Variable& x, const Variable& b) {
  ND_CHECK(!x.shape().empty(),
           "with_bias_gradient: x must have at least one dimension, got " << shape_str(x.shape()));
  const int64_t N = x.shape().back();
  ND_CHECK(b.data().ndim() == 1 && b.shape()[0] == N, "with_bias_gradient: b " << shape_str(b.shape())
                                                          << " does not match x " << shape_str(x.shape())
                                                          << ": expected [" << N << "]");
  check_same_placement(x, b.data(), "with_bias_gradient: b");
  const int64_t M = N == 0 ? 0 : shape_numel(x.shape()) / N;
  // x itself as the result: without a value when x has none (recorded without its forward).
  if (forward_skipped())
    return make_result_without_value({x.shape(), x.dtype(), x.device()}, {x.without_data(), b},
                                     broadcast_add_backward(M, N));
  return make_result(x.data(), {x.without_data(), b}, broadcast_add_backward(M, N));
}

Variable add_positions(const Variable& x, const Variable& wpe) {
  ND_CHECK(x.data().ndim() == 3, "add_positions: x must be (B, T, C), got " << x.data().str());
  ND_CHECK(wpe.data().ndim() == 2 && wpe.shape()[1] == x.shape()[2] && wpe.shape()[0] >= x.shape()[1],
           "add_positions: wpe " << shape_str(wpe.shape()) << " does not cover x " << shape_str(x.shape())
                                 << ": expected (Tmax >= " << x.shape()[1] << ", " << x.shape()[2] << ")");
  check_same_placement(x, wpe.data(), "add_positions: wpe");
  return broadcast_add(x, wpe, x.shape()[0], x.shape()[1] * x.shape()[2]);
}

}  // namespace nd::ops

// ops::dropout: inverted dropout whose mask is a function of Philox counters. The forward
// reserves numel counters from the generator; the closure keeps them and p, and backward
// recomputes the same mask instead of storing it. Backward does not read x, so x is not kept.
// The share variant draws x's elements as a slice of a larger tensor (sequence parallelism).
#include "autograd/dispatch.h"
#include "autograd/ops.h"
#include "autograd/without_forward.h"
#include "kernels/cpu/dropout.h"
#include "kernels/cuda/dropout.h"

namespace nd::ops {

Variable dropout(const Variable& x, float p, Generator& gen, bool training) {
  return dropout_share(x, p, gen, training, shape_numel(x.shape()), 0);
}

Variable dropout_share(const Variable& x, float p, Generator& gen, bool training, int64_t whole_numel,
                       int64_t first_element) {
  // x by its shape: recorded without its forward (autograd/without_forward.h), x may have no value.
  const int64_t numel = shape_numel(x.shape());
  ND_CHECK(p >= 0.0f && p <= 1.0f, "dropout: p must lie in [0, 1], got " << p << " for x " << shape_str(x.shape()));
  ND_CHECK(first_element >= 0 && first_element + numel <= whole_numel,
           "dropout: a share of " << numel << " elements from element " << first_element
                                  << " does not fit a tensor of " << whole_numel);
  if (!training || p == 0.0f) return x;
  // Element i's draw is philox_uniform(seed, rng.start() + i, stream): the whole tensor's counters
  // are reserved, and this share starts at its first element's. Reserved without the forward too:
  // a rerun draws what the forward drew.
  PhiloxCounters rng = gen.reserve(static_cast<uint64_t>(whole_numel));
  rng.first += static_cast<uint64_t>(first_element);
  const double bytes = 2.0 * static_cast<double>(numel) * static_cast<double>(dtype_size(x.dtype()));  // x, out
  auto backward = [p, rng, bytes](const Tensor& grad_out, std::vector<Variable>& in) {
    const GradSlot dx = in[0].grad_slot();
    if (op_timer::enabled()) op_timer::note_next({0.0, dx.accumulate ? 1.5 * bytes : bytes, ""});
    ND_DISPATCH_KERNEL(grad_out, "dropout backward",
                       backend::dropout_backward(grad_out.data<scalar_t>(), grad_dest<scalar_t>(dx), grad_out.numel(),
                                                 p, rng));
  };
  if (forward_skipped())
    return make_result_without_value({x.shape(), x.dtype(), x.device()}, {x.without_data()}, backward);
  const Tensor& xd = x.data();
  Tensor out = Tensor::empty(xd.shape(), xd.dtype(), xd.device());
  if (op_timer::enabled()) op_timer::note_next({0.0, bytes, ""});
  ND_DISPATCH_KERNEL(xd, "dropout",
                     backend::dropout_forward(xd.data<scalar_t>(), out.data<scalar_t>(), xd.numel(), p, rng));
  return make_result(out, {x.without_data()}, backward);
}

}  // namespace nd::ops

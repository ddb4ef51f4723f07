// ops::dropout: inverted dropout whose mask is a function of Philox counters. The forward
// reserves numel counters from the generator; the closure keeps them and p, and backward
// recomputes the same mask instead of storing it. Backward does not read x, so x is not kept.
// The share variant draws x's elements as a slice of a larger tensor (sequence parallelism).
#include "autograd/dispatch.h"
#include "autograd/ops.h"
#include "kernels/cpu/dropout.h"
#include "kernels/cuda/dropout.h"

namespace nd::ops {

Variable dropout(const Variable& x, float p, Generator& gen, bool training) {
  return dropout_share(x, p, gen, training, x.data().numel(), 0);
}

Variable dropout_share(const Variable& x, float p, Generator& gen, bool training, int64_t whole_numel,
                       int64_t first_element) {
  ND_CHECK(p >= 0.0f && p <= 1.0f, "dropout: p must lie in [0, 1], got " << p << " for x " << x.data().str());
  const Tensor& xd = x.data();
  ND_CHECK(first_element >= 0 && first_element + xd.numel() <= whole_numel,
           "dropout: a share of " << xd.numel() << " elements from element " << first_element
                                  << " does not fit a tensor of " << whole_numel);
  if (!training || p == 0.0f) return x;
  // Element i's draw is philox_uniform(seed, rng.start() + i, stream): the whole tensor's counters
  // are reserved, and this share starts at its first element's.
  PhiloxCounters rng = gen.reserve(static_cast<uint64_t>(whole_numel));
  rng.first += static_cast<uint64_t>(first_element);
  Tensor out = Tensor::empty(xd.shape(), xd.dtype(), xd.device());
  const double bytes = 2.0 * static_cast<double>(xd.nbytes());  // read x, write out
  if (op_timer::enabled()) op_timer::note_next({0.0, bytes, ""});
  ND_DISPATCH_KERNEL(xd, "dropout",
                     backend::dropout_forward(xd.data<scalar_t>(), out.data<scalar_t>(), xd.numel(), p, rng));
  return make_result(out, {x.without_data()}, [p, rng, bytes](const Tensor& grad_out, std::vector<Variable>& in) {
    const GradSlot dx = in[0].grad_slot();
    if (op_timer::enabled()) op_timer::note_next({0.0, dx.accumulate ? 1.5 * bytes : bytes, ""});
    ND_DISPATCH_KERNEL(grad_out, "dropout backward",
                       backend::dropout_backward(grad_out.data<scalar_t>(), grad_dest<scalar_t>(dx), grad_out.numel(),
                                                 p, rng));
  });
}

}  // namespace nd::ops

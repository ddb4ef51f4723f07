// ops::dropout_sequence_share and ops::add_positions_from. The share's rows of each sequence are
// contiguous, but one sequence's rows are T * C elements away from the next one's: the dropout runs
// its kernel once per sequence with that sequence's counters; the positions are one broadcast add
// of the share's rows of wpe.
#include "autograd/ops/sequence_share.h"

#include "autograd/dispatch.h"
#include "autograd/ops.h"
#include "autograd/parallel_ops.h"
#include "kernels/cpu/bias_add.h"
#include "kernels/cpu/dropout.h"
#include "kernels/cuda/bias_add.h"
#include "kernels/cuda/dropout.h"
#include "tensor/random.h"

namespace nd::ops {

Variable dropout_sequence_share(const Variable& x, float p, Generator& gen, bool training, int64_t whole_T,
                                int64_t first_position) {
  const Tensor& xd = x.data();
  ND_CHECK(xd.ndim() == 3, "dropout_sequence_share: x must be (B, T_share, C), got " << xd.str());
  const int64_t B = xd.size(0), Ts = xd.size(1), C = xd.size(2);
  ND_CHECK(first_position >= 0 && first_position + Ts <= whole_T,
           "dropout_sequence_share: positions [" << first_position << ", " << first_position + Ts
                                                 << ") do not fit a sequence of " << whole_T);
  ND_CHECK(p >= 0.0f && p <= 1.0f, "dropout: p must lie in [0, 1], got " << p << " for x " << xd.str());
  if (!training || p == 0.0f) return x;
  const PhiloxCounters whole = gen.reserve(static_cast<uint64_t>(B * whole_T * C));
  const int64_t seq = Ts * C;  // elements of one sequence's share
  // Sequence b's share starts at counter b*T*C + first*C of the whole tensor's.
  auto counters = [whole, whole_T, first_position, C](int64_t b) {
    PhiloxCounters rng = whole;
    rng.first += static_cast<uint64_t>((b * whole_T + first_position) * C);
    return rng;
  };
  Tensor out = Tensor::empty(xd.shape(), xd.dtype(), xd.device());
  for (int64_t b = 0; b < B; ++b)
    ND_DISPATCH_KERNEL(xd, "dropout",
                       backend::dropout_forward(xd.data<scalar_t>() + b * seq, out.data<scalar_t>() + b * seq, seq, p,
                                                counters(b)));
  return make_result(out, {x.without_data()}, [p, B, seq, counters](const Tensor& grad_out, std::vector<Variable>& in) {
    const GradSlot dx = in[0].grad_slot();
    if (!dx.wanted()) return;
    for (int64_t b = 0; b < B; ++b)
      ND_DISPATCH_KERNEL(grad_out, "dropout backward",
                         backend::dropout_backward(grad_out.data<scalar_t>() + b * seq,
                                                   GradDest<scalar_t>{dx.buffer.data<scalar_t>() + b * seq,
                                                                      dx.accumulate},
                                                   seq, p, counters(b)));
  });
}

Variable add_positions_from(const Variable& x, const Variable& wpe, int64_t first_position) {
  const Tensor& xd = x.data();
  ND_CHECK(xd.ndim() == 3, "add_positions_from: x must be (B, T_share, C), got " << xd.str());
  const int64_t B = xd.size(0), Ts = xd.size(1), C = xd.size(2);
  ND_CHECK(wpe.data().ndim() == 2 && wpe.shape()[1] == C && first_position >= 0 &&
               first_position + Ts <= wpe.shape()[0],
           "add_positions_from: wpe " << shape_str(wpe.shape()) << " does not cover positions [" << first_position
                                      << ", " << first_position + Ts << ") of " << C << " channels");
  ND_CHECK(wpe.data().dtype() == xd.dtype() && wpe.data().device() == xd.device(),
           "add_positions_from: wpe " << wpe.data().str() << " and x " << xd.str() << " differ in placement");
  const int64_t N = Ts * C;
  Tensor out = Tensor::empty(xd.shape(), xd.dtype(), xd.device());
  const Tensor rows = wpe.data().narrow(first_position, Ts);
  ND_DISPATCH_KERNEL(xd, "add_positions",
                     backend::bias_add_forward(xd.data<scalar_t>(), rows.data<scalar_t>(), out.data<scalar_t>(), B, N));
  return make_result(out, {x.without_data(), wpe},
                     [B, N, Ts, first_position](const Tensor& grad_out, std::vector<Variable>& in) {
                       if (in[1].requires_grad()) {
                         Tensor rows = accumulating_grad(in[1]).narrow(first_position, Ts);
                         ND_DISPATCH_KERNEL(grad_out, "add_positions backward",
                                            backend::bias_add_backward(grad_out.data<scalar_t>(),
                                                                       rows.data<scalar_t>(), B, N));
                       }
                       if (in[0].requires_grad()) pass_gradient(grad_out, in[0]);
                     });
}

}  // namespace nd::ops

// ops::add_positions_share: the share's tokens fall into runs of consecutive positions, cut where
// a sequence ends; each run is one broadcast add of its rows of wpe (kernels/*/bias_add.*, one row
// of run * C elements), forward and backward (the backward adds into the gradient's rows).
#include "autograd/ops/positions_share.h"

#include <algorithm>
#include <vector>

#include "autograd/dispatch.h"
#include "autograd/ops.h"
#include "autograd/parallel_ops.h"
#include "kernels/cpu/bias_add.h"
#include "kernels/cuda/bias_add.h"

namespace nd::ops {
namespace {

struct Run {
  int64_t token, position, length;  // share-relative first token, its position, tokens
};

std::vector<Run> position_runs(int64_t first_token, int64_t S, int64_t T) {
  std::vector<Run> runs;
  for (int64_t j = 0; j < S;) {
    const int64_t position = (first_token + j) % T;
    const int64_t length = std::min(S - j, T - position);
    runs.push_back({j, position, length});
    j += length;
  }
  return runs;
}

}  // namespace

Variable add_positions_share(const Variable& x, const Variable& wpe, int64_t first_token, int64_t T) {
  const Tensor& xd = x.data();
  ND_CHECK(xd.ndim() >= 2, "add_positions_share: x must be (..., C), got " << xd.str());
  const int64_t C = xd.size(-1), S = C == 0 ? 0 : xd.numel() / C;
  ND_CHECK(wpe.data().ndim() == 2 && wpe.shape()[1] == C && T >= 1 && T <= wpe.shape()[0] && first_token >= 0,
           "add_positions_share: wpe " << shape_str(wpe.shape()) << " does not cover " << T << " positions of "
                                       << C << " channels (x " << xd.str() << ")");
  ND_CHECK(wpe.data().dtype() == xd.dtype() && wpe.data().device() == xd.device(),
           "add_positions_share: wpe " << wpe.data().str() << " and x " << xd.str() << " differ in placement");
  const std::vector<Run> runs = position_runs(first_token, S, T);
  Tensor out = Tensor::empty(xd.shape(), xd.dtype(), xd.device());
  for (const Run& run : runs)
    ND_DISPATCH_KERNEL(xd, "add_positions",
                       backend::bias_add_forward(xd.data<scalar_t>() + run.token * C,
                                                 wpe.data().data<scalar_t>() + run.position * C,
                                                 out.data<scalar_t>() + run.token * C, 1, run.length * C));
  return make_result(out, {x.without_data(), wpe}, [runs, C](const Tensor& grad_out, std::vector<Variable>& in) {
    if (in[1].requires_grad()) {
      Tensor dwpe = accumulating_grad(in[1]);
      for (const Run& run : runs)
        ND_DISPATCH_KERNEL(grad_out, "add_positions backward",
                           backend::bias_add_backward(grad_out.data<scalar_t>() + run.token * C,
                                                      dwpe.data<scalar_t>() + run.position * C, 1,
                                                      run.length * C));
    }
    if (in[0].requires_grad()) pass_gradient(grad_out, in[0]);
  });
}

}  // namespace nd::ops

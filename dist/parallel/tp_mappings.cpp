// The tensor-parallel mappings. allreduce_for_tp is the single place where they meet a
// collective; the Comm's ordering contract (dist/comm/comm.h) makes each result ready for the compute
// work queued after it.
#include "dist/parallel/tp_mappings.h"

#include <memory>

#include "autograd/ops.h"
#include "autograd/parallel_ops.h"
#include "autograd/without_forward.h"
#include "dist/parallel/sequence_parallel.h"

namespace nd::dist {

CommWork allreduce_for_tp_async(Comm& comm, Tensor& buffer, ReduceOp op) {
  if (comm.size() == 1) return CommWork();
  return comm.allreduce_async(buffer, op);
}

void allreduce_for_tp(Comm& comm, Tensor& buffer, ReduceOp op) { allreduce_for_tp_async(comm, buffer, op).wait(); }

Variable copy_to_tp(const Variable& x, const TensorParallel& tp) {
  if (!tp.active()) return x;
  Comm* comm = tp.comm;
  return make_result(x.data(), {x.without_data()}, [comm](const Tensor& grad_out, std::vector<Variable>& in) {
    if (!in[0].requires_grad()) return;
    // grad_out is this node's own gradient, dropped after this closure: reduce it in place.
    Tensor summed = grad_out;
    allreduce_for_tp(*comm, summed, ReduceOp::Sum);
    ops::pass_gradient(summed, in[0]);
  });
}

Variable column_parallel_linear(const Variable& x, const Variable& w, const Variable& b, const TensorParallel& tp) {
  if (!tp.active()) return ops::linear(x, w, b);
  if (tp.splits_tokens()) return gathered_column_linear(x, w, b, tp);
  Comm* comm = tp.comm;
  return ops::linear_reduced_dx(x, w, b, [comm](Tensor& dx) -> std::function<void()> {
    auto work = std::make_shared<CommWork>(allreduce_for_tp_async(*comm, dx, ReduceOp::Sum));
    return [work] { work->wait(); };
  });
}

Variable reduce_from_tp(const Variable& x, const TensorParallel& tp) {
  if (!tp.active()) return x;
  auto backward = [](const Tensor& grad_out, std::vector<Variable>& in) {
    if (in[0].requires_grad()) ops::pass_gradient(grad_out, in[0]);
  };
  // Without its forward (autograd/without_forward.h, on every rank of the group alike) no sum is
  // made: the all-reduce is skipped, and backward needs none.
  if (forward_skipped())
    return make_result_without_value({x.shape(), x.dtype(), x.device()}, {x.without_data()}, backward);
  Tensor summed = x.data();
  allreduce_for_tp(*tp.comm, summed, ReduceOp::Sum);
  return make_result(summed, {x.without_data()}, backward);
}

Variable vocab_parallel_cross_entropy(const Variable& logits, const Tensor& targets, int64_t vocab_size,
                                      const TensorParallel& tp, const ops::LossGradient* loss_gradient) {
  ND_CHECK(logits.data().ndim() >= 1, "vocab_parallel_cross_entropy: logits must be (B, T, Vl), got "
                                          << logits.data().str());
  const int64_t vocab_start = static_cast<int64_t>(tp.rank()) * logits.shape().back();
  auto reduce = [&tp](ReduceOp op) {
    return [&tp, op](Tensor& buffer) {
      if (tp.active()) allreduce_for_tp(*tp.comm, buffer, op);
    };
  };
  if (loss_gradient)
    return ops::vocab_parallel_cross_entropy(logits, targets, vocab_start, vocab_size, reduce(ReduceOp::Max),
                                             reduce(ReduceOp::Sum), *loss_gradient);
  return ops::vocab_parallel_cross_entropy(logits, targets, vocab_start, vocab_size, reduce(ReduceOp::Max),
                                           reduce(ReduceOp::Sum));
}

}  // namespace nd::dist

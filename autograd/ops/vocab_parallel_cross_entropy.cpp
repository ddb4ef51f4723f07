// ops::vocab_parallel_cross_entropy: the three forward steps of kernels/*/vocab_parallel_cross_entropy.*
// with the caller's two reductions between them. The loss is a 0-d tensor of loss_dtype (f32 for
// bf16 and f16 logits too), as is the backward's grad_out. Backward reads the
// logits from the input, the targets (shared, not copied: do not overwrite them before backward)
// and the saved (N + 1) buffer: each row's log-sum-exp, then the number of counted rows.
#include <algorithm>

#include "autograd/dispatch.h"
#include "autograd/ops.h"
#include "autograd/ops/loss_seed.h"
#include "autograd/parallel_ops.h"
#include "kernels/cpu/cross_entropy.h"
#include "kernels/cpu/vocab_parallel_cross_entropy.h"
#include "kernels/cuda/vocab_parallel_cross_entropy.h"

namespace nd::ops {

namespace {

struct VocabCrossEntropyDims {
  int64_t N, Vl, valid, vocab_start, V;
};

VocabCrossEntropyDims dims_of(const Tensor& logits, const Tensor& targets, int64_t vocab_start, int64_t V) {
  ND_CHECK(logits.ndim() >= 1, "vocab_parallel_cross_entropy: logits must be (B, T, Vl), got " << logits.str());
  ND_CHECK(targets.defined(), "vocab_parallel_cross_entropy: targets are undefined");
  check_dtype(targets, DType::I32, "vocab_parallel_cross_entropy: targets");
  check_device(targets, logits.device(), "vocab_parallel_cross_entropy: targets");
  const Shape& ls = logits.shape();
  const Shape row_shape(ls.begin(), ls.end() - 1);
  ND_CHECK(targets.shape() == row_shape, "vocab_parallel_cross_entropy: targets "
                                             << shape_str(targets.shape()) << " do not match logits "
                                             << shape_str(ls) << " (expected " << shape_str(row_shape) << ")");
  const int64_t Vl = ls.back();
  ND_CHECK(Vl >= 1 && V >= 1 && vocab_start >= 0,
           "vocab_parallel_cross_entropy: logits " << shape_str(ls) << ", vocab_start " << vocab_start
                                                   << ", vocab_size " << V);
  const int64_t valid = std::clamp<int64_t>(V - vocab_start, 0, Vl);
  return {targets.numel(), Vl, valid, vocab_start, V};
}

// Per-row statistics are StatType<scalar_t>: f32 (for f32, bf16 and f16), f64 for the f64 reference.
void local_stats_on_device(const Tensor& logits, const Tensor& targets, Tensor& row_max, Tensor& stats,
                           const VocabCrossEntropyDims& d) {
  ND_DISPATCH_KERNEL(logits, "vocab_parallel_cross_entropy",
                     backend::vocab_parallel_ce_local_stats(logits.data<scalar_t>(), targets.data<int32_t>(),
                                                            row_max.data<StatType<scalar_t>>(),
                                                            stats.data<StatType<scalar_t>>(), d.N, d.Vl, d.valid,
                                                            d.vocab_start));
}

void rescale_on_device(const Tensor& logits, const Tensor& row_max, Tensor& stats, const VocabCrossEntropyDims& d) {
  ND_DISPATCH_KERNEL(logits, "vocab_parallel_cross_entropy",
                     backend::vocab_parallel_ce_rescale(row_max.data<StatType<scalar_t>>(),
                                                        stats.data<StatType<scalar_t>>(), d.N));
}

// Writes the loss and saved (N + 1): row_lse, then count. Dispatched on the logits, as the other
// steps; everything it reads and writes is StatType.
void loss_on_device(const Tensor& logits, const Tensor& row_max, const Tensor& stats, const Tensor& targets,
                    Tensor& loss, Tensor& saved, const VocabCrossEntropyDims& d) {
  ND_DISPATCH_KERNEL(logits, "vocab_parallel_cross_entropy", {
    StatType<scalar_t>* lse = saved.data<StatType<scalar_t>>();
    backend::vocab_parallel_ce_loss(row_max.data<StatType<scalar_t>>(), stats.data<StatType<scalar_t>>(),
                                    targets.data<int32_t>(), loss.data<StatType<scalar_t>>(), lse, lse + d.N, d.N,
                                    d.V);
  });
}

void backward_on_device(const Tensor& dloss, const Tensor& logits, const Tensor& targets, const Tensor& saved,
                        Tensor& dlogits, bool accumulate, const VocabCrossEntropyDims& d) {
  ND_DISPATCH_KERNEL(logits, "vocab_parallel_cross_entropy backward", {
    const StatType<scalar_t>* lse = saved.data<StatType<scalar_t>>();
    backend::vocab_parallel_ce_backward(logits.data<scalar_t>(), targets.data<int32_t>(), lse, lse + d.N,
                                        dloss.data<StatType<scalar_t>>(), dlogits.data<scalar_t>(), d.N, d.Vl, d.valid,
                                        d.vocab_start, accumulate);
  });
}

}  // namespace

namespace {

// The forward's reductions: the loss, and saved (N + 1) row log-sum-exp then the count.
struct VocabCrossEntropyForward {
  Tensor loss, saved;
  VocabCrossEntropyDims d;
};

VocabCrossEntropyForward forward_on_device(const Tensor& x, const Tensor& targets, int64_t vocab_start,
                                           int64_t vocab_size, const RowStatsReduce& max_over_ranks,
                                           const RowStatsReduce& sum_over_ranks) {
  const VocabCrossEntropyDims d = dims_of(x, targets, vocab_start, vocab_size);
  // Every rank sees the same targets, so a bad one raises on all of them before any reduction.
  if (x.device().is_cpu()) cpu::count_cross_entropy_targets(targets.data<int32_t>(), d.N, d.V);
  const DType stats_dtype = stat_dtype(x.dtype());
  Tensor row_max = Tensor::empty({2, d.N}, stats_dtype, x.device());
  Tensor stats = Tensor::empty({2, d.N}, stats_dtype, x.device());
  local_stats_on_device(x, targets, row_max, stats, d);
  Tensor global_max = row_max.select(1);
  max_over_ranks(global_max);
  rescale_on_device(x, row_max, stats, d);
  sum_over_ranks(stats);
  VocabCrossEntropyForward f{Tensor::empty({}, loss_dtype(x.dtype()), x.device()),
                             Tensor::empty({d.N + 1}, stats_dtype, x.device()), d};
  loss_on_device(x, row_max, stats, targets, f.loss, f.saved, d);
  return f;
}

}  // namespace

Variable vocab_parallel_cross_entropy(const Variable& logits, const Tensor& targets, int64_t vocab_start,
                                      int64_t vocab_size, const RowStatsReduce& max_over_ranks,
                                      const RowStatsReduce& sum_over_ranks) {
  VocabCrossEntropyForward f =
      forward_on_device(logits.data(), targets, vocab_start, vocab_size, max_over_ranks, sum_over_ranks);
  const Tensor saved = f.saved;
  const VocabCrossEntropyDims d = f.d;
  return make_result(f.loss, {logits}, [targets, saved, d](const Tensor& grad_out, std::vector<Variable>& inputs) {
    if (!inputs[0].requires_grad()) return;
    Variable& in = inputs[0];
    // A first gradient is written, not added: no zero-filled (N, Vl) buffer beforehand.
    GradSlot slot = in.grad_slot();
    backward_on_device(grad_out, in.data(), targets, saved, slot.buffer, slot.accumulate, d);
  });
}

Variable vocab_parallel_cross_entropy(const Variable& logits, const Tensor& targets, int64_t vocab_start,
                                      int64_t vocab_size, const RowStatsReduce& max_over_ranks,
                                      const RowStatsReduce& sum_over_ranks, const LossGradient& gradient) {
  const Tensor& x = logits.data();
  if (!grad_enabled() || !logits.requires_grad())
    return vocab_parallel_cross_entropy(logits, targets, vocab_start, vocab_size, max_over_ranks, sum_over_ranks);
  check_loss_seed(gradient.seed, x, "vocab_parallel_cross_entropy");
  VocabCrossEntropyForward f = forward_on_device(x, targets, vocab_start, vocab_size, max_over_ranks, sum_over_ranks);
  // The CUDA kernel reads and writes each element once per thread (in place is safe); the CPU one
  // clears its output first.
  const bool in_place = gradient.overwrite_logits && x.device().is_cuda();
  const Tensor seed = gradient.seed, saved = f.saved;
  const VocabCrossEntropyDims d = f.d;
  Tensor dlogits = in_place ? x : Tensor::empty(x.shape(), x.dtype(), x.device());
  backward_on_device(seed, x, targets, saved, dlogits, /*accumulate=*/false, d);
  Variable result = make_result(f.loss, {logits}, [targets, saved, d, seed, dlogits, in_place](
                                                      const Tensor& grad_out, std::vector<Variable>& inputs) {
    if (!inputs[0].requires_grad()) return;
    Variable& in = inputs[0];
    if (is_loss_seed(grad_out, seed)) return pass_gradient(dlogits, in);
    ND_CHECK(!in_place, "vocab_parallel_cross_entropy: the logits were overwritten by the gradient for the announced "
                        "seed; a backward from another seed cannot recompute it");
    GradSlot slot = in.grad_slot();
    backward_on_device(grad_out, in.data(), targets, saved, slot.buffer, slot.accumulate, d);
  });
  result.grad_fn()->only_reads_grad_out = true;
  return result;
}

}  // namespace nd::ops

// ops::gathered_linear and ops::scattered_linear. Chunk layout: the share's S rows (tokens) are
// split into k chunks [s_c, s_c + m_c); chunk c's collective moves ranks * m_c rows held in a
// staging buffer at rows ranks * s_c (rank r's at + r * m_c), which is the whole when k = 1. A GEMM
// on rows of rank r's chunk c reads or writes rows r * S + s_c of the whole (its tokens in order),
// so every operand is a contiguous row range and no reordering pass is needed.
#include "autograd/ops/split_linear.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "autograd/dispatch.h"
#include "autograd/ops.h"
#include "autograd/ops/linear_dims.h"
#include "autograd/parallel_ops.h"
#include "autograd/weight_grad_queue.h"
#include "autograd/without_forward.h"
#include "kernels/cpu/gelu.h"
#include "kernels/cpu/linear.h"
#include "kernels/cuda/gelu.h"
#include "kernels/cuda/linear.h"

namespace nd::ops {
namespace {

using Wait = SplitCollectives::Wait;

struct Chunk {
  int64_t first, rows;
};

std::vector<Chunk> row_chunks(int64_t S, int k) {
  k = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(k, S)));
  std::vector<Chunk> chunks;
  for (int c = 0; c < k; ++c) {
    const int64_t first = S * c / k, end = S * (c + 1) / k;
    chunks.push_back({first, end - first});
  }
  return chunks;
}

Tensor rows_of(const Tensor& t2d, int64_t first, int64_t rows) { return t2d.narrow(first, rows); }

// out rows = a rows · wᵀ (+ b): one GEMM on contiguous row ranges.
void product(const Tensor& a, const Tensor& w, const Tensor* b, Tensor out, int64_t N, int64_t K) {
  const int64_t M = a.size(0);
  if (M == 0) return;
  ND_DISPATCH_KERNEL(a, "linear",
                     backend::linear_forward(a.data<scalar_t>(), w.data<scalar_t>(), b ? b->data<scalar_t>() : nullptr,
                                             out.data<scalar_t>(), M, N, K));
}

// out rows = gelu(pre rows), pre rows = a rows · wᵀ (+ b).
void gelu_product(const Tensor& a, const Tensor& w, const Tensor* b, Tensor out, Tensor pre, int64_t N, int64_t K) {
  const int64_t M = a.size(0);
  if (M == 0) return;
  ND_DISPATCH_KERNEL(a, "linear_gelu",
                     backend::linear_gelu_forward(a.data<scalar_t>(), w.data<scalar_t>(),
                                                  b ? b->data<scalar_t>() : nullptr, out.data<scalar_t>(),
                                                  pre.data<scalar_t>(), M, N, K));
}

// dx rows (+)= dout rows · w.
void input_gradient(const Tensor& dout, const Tensor& w, const Tensor& dx, bool accumulate, int64_t N, int64_t K) {
  const int64_t M = dout.size(0);
  if (M == 0) return;
  ND_DISPATCH_KERNEL(dout, "linear backward (input)",
                     backend::linear_backward(dout.data<scalar_t>(), dout.data<scalar_t>(), w.data<scalar_t>(),
                                              GradDest<scalar_t>{dx.data<scalar_t>(), accumulate},
                                              GradDest<scalar_t>{}, GradDest<scalar_t>{}, M, N, K));
}

// dw (+)= doutᵀ · x, db (+)= column sums of dout, over all M rows.
void weight_gradients(const Tensor& dout, const Tensor& x, const Tensor& w, const GradSlot& dw, const GradSlot& db,
                      int64_t N, int64_t K) {
  if (!dw.wanted() && !db.wanted()) return;
  ND_DISPATCH_KERNEL(x, "linear backward (weight)",
                     backend::linear_backward(dout.data<scalar_t>(), x.data<scalar_t>(), w.data<scalar_t>(),
                                              GradDest<scalar_t>{}, grad_dest<scalar_t>(dw), grad_dest<scalar_t>(db),
                                              dout.size(0), N, K));
}

// The weight gradients now, or (zero-bubble, autograd/weight_grad_queue.h) when the queue runs.
void weight_gradients_when_due(const Tensor& dout, const Tensor& x, const Tensor& w, const Variable& wv,
                               const Variable& bv, int64_t N, int64_t K) {
  if (WeightGradientQueue* deferred = deferred_weight_gradients()) {
    deferred->push([=, wv = wv, bv = bv]() mutable {
      weight_gradients(dout, x, w, wv.grad_slot(), bv.defined() ? bv.grad_slot() : GradSlot(), N, K);
    });
    return;
  }
  Variable wm = wv, bm = bv;
  weight_gradients(dout, x, w, wm.grad_slot(), bm.defined() ? bm.grad_slot() : GradSlot(), N, K);
}

// Whether this reduce-scatter (into `shard`) goes in two halves: with overlap (chunks) on, where
// the comm has them (SplitCollectives::halves).
bool sends_in_halves(const SplitCollectives& c, const Tensor& shard) {
  return c.chunks != 0 && c.halves && c.send && c.halves(shard);
}

// whole (ranks blocks) reduce-scattered into shard in two halves: block(r) queues the GEMM that
// writes rank r's block of whole; the other ranks' blocks are computed and sent first, and this
// rank's own is computed while they move. Returns the reduce-scatter's Wait.
Wait scatter_in_halves(const SplitCollectives& c, const Tensor& whole, Tensor& shard,
                       const std::function<void(int r)>& block) {
  for (int r = 0; r < c.ranks; ++r)
    if (r != c.rank) block(r);
  const auto finish = c.send(whole, shard);
  block(c.rank);
  return finish();
}

// The token dimension (the one before the features) times `times`, or divided by `over`.
Shape tokens_times(Shape shape, int64_t times) {
  shape[shape.size() - 2] *= times;
  return shape;
}

// A buffer for a gather's whole: the collectives' own where they have one (SplitCollectives::whole).
Tensor new_whole(const SplitCollectives& c, const Shape& shape, const Tensor& like) {
  return c.whole ? c.whole(shape, like.dtype()) : Tensor::empty(shape, like.dtype(), like.device());
}

// The gather of `shard` into `whole`; `own` false: the caller never reads block rank() of it.
Wait gather_into(const SplitCollectives& c, const Tensor& shard, Tensor& whole, bool own) {
  return own || !c.gather_others ? c.gather(shard, whole) : c.gather_others(shard, whole);
}

// The whole (ranks * S, K), every token in order, gathered from the share (S, K) in one collective;
// `own` false: block rank() may be left unwritten.
Tensor gather_whole(const Tensor& share2d, const SplitCollectives& c, Wait* wait, bool own) {
  Tensor whole = new_whole(c, {share2d.size(0) * c.ranks, share2d.size(1)}, share2d);
  *wait = gather_into(c, share2d, whole, own);
  return whole;
}

}  // namespace

Variable gathered_linear(const Variable& x, const Variable& w, const Variable& b, const SplitCollectives& c,
                         bool gelu) {
  const Tensor& xd = x.data();
  const LinearDims d = linear_dims("gathered_linear", xd, w.data(), b.defined() ? &b.data() : nullptr);
  ND_CHECK(xd.ndim() >= 2, "gathered_linear: x must be (..., Ts, K), got " << xd.str());
  const int64_t S = d.M, N = d.N, K = d.K, R = c.ranks;
  Shape out_shape = tokens_times(xd.shape(), R);
  out_shape.back() = N;
  Tensor out = Tensor::empty(out_shape, xd.dtype(), xd.device());
  Tensor out2d = out.view({R * S, N});
  // With gelu: the GEMM writes pre (kept for backward) and out = gelu(pre).
  const Tensor pre = gelu ? Tensor::empty(out_shape, xd.dtype(), xd.device()) : Tensor();
  const Tensor pre2d = gelu ? pre.view({R * S, N}) : Tensor();
  const Tensor x2d = xd.view({S, K});
  const Tensor* bias = b.defined() ? &b.data() : nullptr;
  // Output rows [first, first + rows) from input rows `a`.
  auto multiply = [&](const Tensor& a, int64_t first, int64_t rows) {
    if (gelu)
      gelu_product(a, w.data(), bias, rows_of(out2d, first, rows), rows_of(pre2d, first, rows), N, K);
    else
      product(a, w.data(), bias, rows_of(out2d, first, rows), N, K);
  };
  if (c.chunks == 0) {
    Wait wait;
    Tensor whole = gather_whole(x2d, c, &wait, /*own=*/true);
    wait();
    multiply(whole, 0, R * S);
  } else {
    // Every chunk's gather starts now (each waits only for x); this rank's own block needs none.
    const std::vector<Chunk> chunks = row_chunks(S, c.chunks);
    Tensor staging = new_whole(c, {R * S, K}, xd);
    std::vector<Wait> waits;
    for (const Chunk& ch : chunks) {
      Tensor dst = rows_of(staging, R * ch.first, R * ch.rows);
      waits.push_back(gather_into(c, rows_of(x2d, ch.first, ch.rows), dst, /*own=*/false));
    }
    multiply(x2d, c.rank * S, S);
    for (size_t i = 0; i < chunks.size(); ++i) {
      const Chunk& ch = chunks[i];
      waits[i]();
      for (int r = 0; r < R; ++r)
        if (r != c.rank) multiply(rows_of(staging, R * ch.first + r * ch.rows, ch.rows), r * S + ch.first, ch.rows);
    }
  }
  std::vector<Variable> inputs = {x, w};
  if (b.defined()) inputs.push_back(b);
  return make_result(out, std::move(inputs), [S, N, K, c, pre](const Tensor& grad_out, std::vector<Variable>& in) {
    const Tensor& x = in[0].data();
    const Tensor& w = in[1].data();
    const bool weights = in[1].requires_grad() || (in.size() > 2 && in[2].requires_grad());
    // The input is gathered again (it was not kept) while the GELU's and the input-gradient GEMM
    // run (first, because a collective waits for all compute queued before it) ...
    Wait gathered;
    Tensor whole = weights ? gather_whole(x.view({S, K}), c, &gathered, /*own=*/true) : Tensor();
    Tensor dout = grad_out.view({c.ranks * S, N});
    if (pre.defined()) {
      // Through the GELU: the product's own output gradient.
      Tensor dpre = Tensor::empty({c.ranks * S, N}, grad_out.dtype(), grad_out.device());
      ND_DISPATCH_KERNEL(dout, "gelu backward",
                         backend::gelu_backward(pre.data<scalar_t>(), dout.data<scalar_t>(),
                                                GradDest<scalar_t>{dpre.data<scalar_t>(), false}, dpre.numel()));
      dout = dpre;
    }
    // dx_whole lives until scattered() has ordered the compute stream after the reduce-scatter
    // reading it (the comm holds no tensor: a block freed earlier could be handed to the
    // weight-gradient GEMM below while the collective still reads it).
    Tensor dx_share, dx_whole;
    Wait scattered;
    if (in[0].requires_grad()) {
      dx_whole = Tensor::empty({c.ranks * S, K}, x.dtype(), x.device());
      dx_share = Tensor::empty(x.shape(), x.dtype(), x.device());
      Tensor dx_share2d = dx_share.view({S, K});
      if (sends_in_halves(c, dx_share2d)) {
        scattered = scatter_in_halves(c, dx_whole, dx_share2d, [&](int r) {
          input_gradient(rows_of(dout, r * S, S), w, rows_of(dx_whole, r * S, S), false, N, K);
        });
      } else {
        input_gradient(dout, w, dx_whole, false, N, K);
        scattered = c.scatter(dx_whole, dx_share2d);
      }
    }
    // ... and the input gradient is reduce-scattered while the weight-gradient GEMM runs.
    if (weights) {
      gathered();
      weight_gradients_when_due(dout, whole, w, in[1], in.size() > 2 ? in[2] : Variable(), N, K);
    }
    if (!scattered) return;
    scattered();
    pass_gradient(dx_share, in[0]);
  });
}

Variable scattered_linear(const Variable& x, const Variable& w, const SplitCollectives& c, const Variable& b) {
  const Tensor& xd = x.data();
  const LinearDims d = linear_dims("scattered_linear", xd, w.data(), b.defined() ? &b.data() : nullptr);
  const int64_t R = c.ranks;
  ND_CHECK(xd.ndim() >= 2 && xd.size(-2) % R == 0,
           "scattered_linear: x must be (..., ranks * Ts, K) with ranks " << R << ", got " << xd.str());
  const int64_t S = d.M / R, N = d.N, K = d.K;
  Shape out_shape = xd.shape();
  out_shape[out_shape.size() - 2] /= R;
  out_shape.back() = N;
  // Without its forward (autograd/without_forward.h, on every rank alike) neither the products nor
  // the reduce-scatter run: backward reads x and w, and gathers the output gradient itself.
  const bool skipped = forward_skipped();
  Tensor out = skipped ? Tensor() : Tensor::empty(out_shape, xd.dtype(), xd.device());
  const Tensor x2d = xd.view({R * S, K});
  // The bias rides in rank 0's partial products (the GEMM's epilogue), so every share's sum holds it
  // once with no pass of its own.
  const Tensor* bias = b.defined() && c.rank == 0 ? &b.data() : nullptr;
  if (!skipped) {
    Tensor partial = Tensor::empty({R * S, N}, xd.dtype(), xd.device());
    Tensor out2d = out.view({S, N});
    if (sends_in_halves(c, out2d)) {
      scatter_in_halves(c, partial, out2d, [&](int r) {
        product(rows_of(x2d, r * S, S), w.data(), bias, rows_of(partial, r * S, S), N, K);
      })();
    } else if (c.chunks == 0) {
      product(x2d, w.data(), bias, partial, N, K);
      c.scatter(partial, out2d)();
    } else {
      // Chunk c's reduce-scatter starts once its GEMMs are queued and runs while the next chunk's do.
      std::vector<Wait> waits;
      for (const Chunk& ch : row_chunks(S, c.chunks)) {
        for (int r = 0; r < R; ++r)
          product(rows_of(x2d, r * S + ch.first, ch.rows), w.data(), bias,
                  rows_of(partial, R * ch.first + r * ch.rows, ch.rows), N, K);
        Tensor dst = rows_of(out2d, ch.first, ch.rows);
        waits.push_back(c.scatter(rows_of(partial, R * ch.first, R * ch.rows), dst));
      }
      for (Wait& wait : waits) wait();
    }
  }
  std::vector<Variable> inputs = {x, w};
  if (b.defined()) inputs.push_back(b);
  auto backward = [S, N, K, c](const Tensor& grad_out, std::vector<Variable>& in) {
    const Tensor& x = in[0].data();
    const Tensor& w = in[1].data();
    const Tensor dshare = grad_out.view({S, N});
    Wait gathered;
    Tensor dout = gather_whole(dshare, c, &gathered, /*own=*/false);
    const GradSlot dx = in[0].grad_slot();
    const Tensor x2d = x.view({c.ranks * S, K});
    const bool weights = in[1].requires_grad() || (in.size() > 2 && in[2].requires_grad());
    // This rank's own block of both gradients from its own output gradient while the other blocks
    // move (the weight gradient sums over tokens, so its own block's part is a GEMM of its own, and
    // the other blocks' parts add to it); alone, the own block's input GEMM hid a third of the gather.
    // The bias gradient is this share's column sums (the GEMM's epilogue): each rank's share of it,
    // summed over the group with the other replicated parameters' (dist::sum_gradients_over_tp).
    Tensor dx2d = dx.wanted() ? dx.buffer.view({c.ranks * S, K}) : Tensor();
    if (dx.wanted()) input_gradient(dshare, w, rows_of(dx2d, c.rank * S, S), dx.accumulate, N, K);
    if (weights)
      weight_gradients_when_due(dshare, rows_of(x2d, c.rank * S, S), w, in[1], in.size() > 2 ? in[2] : Variable(),
                                N, K);
    gathered();
    for (int r = 0; r < c.ranks; ++r) {
      if (r == c.rank) continue;
      if (dx.wanted()) input_gradient(rows_of(dout, r * S, S), w, rows_of(dx2d, r * S, S), dx.accumulate, N, K);
      if (in[1].requires_grad())
        weight_gradients_when_due(rows_of(dout, r * S, S), rows_of(x2d, r * S, S), w, in[1], Variable(), N, K);
    }
  };
  if (skipped) return make_result_without_value({out_shape, xd.dtype(), xd.device()}, std::move(inputs), backward);
  return make_result(out, std::move(inputs), backward);
}

}  // namespace nd::ops

// CPU causal self-attention, forward and backward, parallel over (batch, head) pairs: each pair
// reads and writes its own columns of qkv / out / dqkv, so the threads never share an output.
// Each thread's scratch is taken before the parallel region (scratch.h).
// The products run on the shared GEMM (kernels/cpu/matmul.h) over per-head contiguous copies.
// Dropout multiplies the probabilities by a (T, T) matrix of 0 or 1 / (1 - p) drawn per head.
#include "kernels/cpu/attention.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <string>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/scratch.h"
#include "tensor/error.h"

namespace nd::cpu {

namespace {

void check_attention_dims(int64_t B, int64_t T, int64_t C, int64_t NH) {
  ND_CHECK(B >= 0 && T >= 0 && C > 0 && NH > 0 && C % NH == 0,
           "attention kernel: B " << B << ", T " << T << ", C " << C << ", NH " << NH
                                  << " (C must be a positive multiple of NH)");
  // The per-head GEMMs take int dimensions; checked here because the GEMM's own check would
  // throw inside the parallel region.
  ND_CHECK(T <= INT_MAX, "attention kernel: T " << T << " exceeds the GEMM's int dimensions");
}

// What the scratch of one (batch, head) pair holds, for the out-of-memory message.
std::string scratch_what(const char* pass, int64_t T) {
  return std::string("attention ") + pass + " (sequence length " + std::to_string(T) +
         ": a T x T score matrix per thread)";
}

// Copies one head's rows, src (T, row_stride) at column offset already applied -> dst (T, hs).
template <typename Float>
void gather_head(const Float* src, int64_t row_stride, Float* dst, int64_t T, int64_t hs) {
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < hs; ++i) dst[t * hs + i] = src[t * row_stride + i];
}

// dst (T, row_stride) at the head's columns (+)= src (T, hs).
template <typename Float>
void scatter_head(const Float* src, Float* dst, int64_t row_stride, int64_t T, int64_t hs, bool accumulate) {
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < hs; ++i) {
      Float& d = dst[t * row_stride + i];
      d = (accumulate ? d : Float(0)) + src[t * hs + i];
    }
}

// p (T, T) = exp(scale q kᵀ - lse) on and below the diagonal, 0 above: the probabilities of the
// forward, rebuilt from its row log-sum-exp. q, k (T, hs).
template <typename Float>
void recompute_probs(const Float* q, const Float* k, const StatType<Float>* lse, Float* p, int64_t T, int64_t hs,
                     Float scale) {
  matmul(q, k, p, T, T, hs, false, true, Float(0));
  for (int64_t t = 0; t < T; ++t) {
    Float* row = p + t * T;
    for (int64_t s = 0; s <= t; ++s) row[s] = std::exp(row[s] * scale - static_cast<Float>(lse[t]));
    for (int64_t s = t + 1; s < T; ++s) row[s] = 0;
  }
}

// keep (T, T) of head bh: 1 / (1 - p) where the dropout keeps (i, j), j <= i; 0 elsewhere.
template <typename Float>
void draw_keep_scale(Float* keep, const AttentionDropout& draw, int64_t bh, int64_t T) {
  const AttentionDropout dropout = draw.resolved();
  const Float scale = Float(1) / (Float(1) - static_cast<Float>(dropout.p));  // unused when p == 1
  for (int64_t i = 0; i < T; ++i) {
    const uint64_t counter = dropout.row_counter(bh, T, i);
    for (int64_t j = 0; j < T; ++j) keep[i * T + j] = j <= i && dropout.kept(counter + j) ? scale : Float(0);
  }
}

// dst (T, T) = a ∘ b.
template <typename Float>
void multiply_elementwise(const Float* a, const Float* b, Float* dst, int64_t T) {
  for (int64_t e = 0; e < T * T; ++e) dst[e] = a[e] * b[e];
}

}  // namespace

// Per (b, h): the head's q, k, v are gathered into contiguous (T, hs) blocks so that both products
// run on the shared GEMM (serial inside this parallel loop). The full T x T score matrix is computed
// and the upper triangle discarded: the GEMM is fast enough that the wasted half costs less than
// a hand-written triangular loop.
template <typename Float>
void attention_forward(const Float* qkv, Float* out, StatType<Float>* lse, int64_t B, int64_t T, int64_t C,
                       int64_t NH, const AttentionDropout& dropout) {
  check_attention_dims(B, T, C, NH);
  const bool drop = dropout.active();
  const int64_t hs = C / NH;
  const int64_t C3 = 3 * C;
  const Float scale = Float(1) / std::sqrt(static_cast<Float>(hs));
  const double per_pair = 4.0 * T * hs + (drop ? 3.0 : 1.0) * T * T;
  const PerThreadScratch<Float> scratch(per_pair, region_threads(B * NH), scratch_what("forward", T));
#pragma omp parallel num_threads(scratch.threads())
  {
    Float* q = scratch.slice(omp_get_thread_num());
    Float* k = q + T * hs;
    Float* v = k + T * hs;
    Float* o = v + T * hs;
    Float* p = o + T * hs;          // (T, T): the probabilities
    Float* keep = p + T * T;        // (T, T) with dropout: the keep scale
    Float* dropped = keep + T * T;  // (T, T) with dropout: P ∘ keep
#pragma omp for collapse(2) schedule(static)
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t h = 0; h < NH; ++h) {
        const Float* head = qkv + b * T * C3 + h * hs;
        gather_head(head, C3, q, T, hs);
        gather_head(head + C, C3, k, T, hs);
        gather_head(head + 2 * C, C3, v, T, hs);
        StatType<Float>* head_lse = lse + (b * NH + h) * T;
        matmul(q, k, p, T, T, hs, false, true, Float(0));
        for (int64_t t = 0; t < T; ++t) {
          Float* row = p + t * T;
          Float row_max = -INFINITY;
          for (int64_t s = 0; s <= t; ++s) row_max = std::max(row_max, row[s] * scale);
          Float sum = 0;
          for (int64_t s = 0; s <= t; ++s) {
            row[s] = std::exp(row[s] * scale - row_max);
            sum += row[s];
          }
          head_lse[t] = row_max + std::log(sum);
          const Float inv_sum = Float(1) / sum;
          for (int64_t s = 0; s <= t; ++s) row[s] *= inv_sum;
          for (int64_t s = t + 1; s < T; ++s) row[s] = 0;
        }
        const Float* weights = p;
        if (drop) {
          draw_keep_scale(keep, dropout, b * NH + h, T);
          multiply_elementwise(p, keep, dropped, T);
          weights = dropped;
        }
        matmul(weights, v, o, T, hs, T, false, false, Float(0));
        Float* out_head = out + b * T * C + h * hs;
        for (int64_t t = 0; t < T; ++t)
          for (int64_t i = 0; i < hs; ++i) out_head[t * C + i] = o[t * hs + i];
      }
    }
  }
}

// With P = softmax(S), S = scale q kᵀ, K the keep scale (all ones without dropout) and
// out = (P ∘ K) v (all per head, (T, hs) and (T, T)):
//   dv = (P ∘ K)ᵀ dout;  dP = (dout vᵀ) ∘ K;  dS[t,s] = P[t,s] (dP[t,s] - delta[t]),
//   delta[t] = sum_j P[t,j] dP[t,j] = dout[t] · out[t];  dq = scale dS k;  dk = scale dSᵀ q.
// P is zero above the diagonal, so is dS.
template <typename Float>
void attention_backward(const Float* dout, const Float* qkv, const Float* out, const StatType<Float>* lse,
                        GradDest<Float> dqkv, int64_t B, int64_t T, int64_t C, int64_t NH,
                        const AttentionDropout& dropout) {
  check_attention_dims(B, T, C, NH);
  if (dqkv.ptr == nullptr) return;
  const bool drop = dropout.active();
  const bool accumulate = dqkv.accumulate;
  const int64_t hs = C / NH;
  const int64_t C3 = 3 * C;
  const Float scale = Float(1) / std::sqrt(static_cast<Float>(hs));
  const double per_pair = 5.0 * T * hs + (drop ? 4.0 : 2.0) * T * T + T;
  const PerThreadScratch<Float> scratch(per_pair, region_threads(B * NH), scratch_what("backward", T));
#pragma omp parallel num_threads(scratch.threads())
  {
    Float* q = scratch.slice(omp_get_thread_num());
    Float* k = q + T * hs;
    Float* v = k + T * hs;
    Float* dout_head = v + T * hs;
    Float* grad = dout_head + T * hs;  // (T, hs): dv, then dq, then dk
    Float* p = grad + T * hs;          // (T, T): the probabilities
    Float* ds = p + T * T;             // (T, T): dP, then dS in place
    Float* delta = ds + T * T;         // (T)
    Float* keep = delta + T;           // (T, T) with dropout: the keep scale
    Float* dropped = keep + T * T;     // (T, T) with dropout: P ∘ keep
#pragma omp for collapse(2) schedule(static)
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t h = 0; h < NH; ++h) {
        const Float* head = qkv + b * T * C3 + h * hs;
        Float* dhead = dqkv.ptr + b * T * C3 + h * hs;
        gather_head(head, C3, q, T, hs);
        gather_head(head + C, C3, k, T, hs);
        gather_head(head + 2 * C, C3, v, T, hs);
        gather_head(dout + b * T * C + h * hs, C, dout_head, T, hs);
        const Float* out_head = out + b * T * C + h * hs;
        for (int64_t t = 0; t < T; ++t) {
          Float sum = 0;
          for (int64_t i = 0; i < hs; ++i) sum += dout_head[t * hs + i] * out_head[t * C + i];
          delta[t] = sum;
        }
        recompute_probs(q, k, lse + (b * NH + h) * T, p, T, hs, scale);
        const Float* weights = p;
        if (drop) {
          draw_keep_scale(keep, dropout, b * NH + h, T);
          multiply_elementwise(p, keep, dropped, T);
          weights = dropped;
        }
        matmul(weights, dout_head, grad, T, hs, T, true, false, Float(0));
        scatter_head(grad, dhead + 2 * C, C3, T, hs, accumulate);
        matmul(dout_head, v, ds, T, T, hs, false, true, Float(0));
        if (drop) multiply_elementwise(ds, keep, ds, T);
        for (int64_t t = 0; t < T; ++t) {
          const Float* p_row = p + t * T;
          Float* row = ds + t * T;
          for (int64_t s = 0; s <= t; ++s) row[s] = p_row[s] * (row[s] - delta[t]) * scale;
          for (int64_t s = t + 1; s < T; ++s) row[s] = 0;
        }
        matmul(ds, k, grad, T, hs, T, false, false, Float(0));
        scatter_head(grad, dhead, C3, T, hs, accumulate);
        matmul(ds, q, grad, T, hs, T, true, false, Float(0));
        scatter_head(grad, dhead + C, C3, T, hs, accumulate);
      }
    }
  }
}

#define ND_INSTANTIATE_ATTENTION(T)                                                                          \
  template void attention_forward<T>(const T*, T*, T*, int64_t, int64_t, int64_t, int64_t,                   \
                                     const AttentionDropout&);                                               \
  template void attention_backward<T>(const T*, const T*, const T*, const T*, GradDest<T>, int64_t, int64_t, \
                                      int64_t, int64_t, const AttentionDropout&)
ND_CPU_INSTANTIATE(ND_INSTANTIATE_ATTENTION);

}  // namespace nd::cpu

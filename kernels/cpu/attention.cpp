// CPU causal self-attention, forward and backward, parallel over (batch, head) pairs: each pair
// reads and writes its own columns of qkv / out / dqkv, so the threads never share an output.
#include "kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace nd::cpu {

namespace {

template <typename Float>
inline Float dot(const Float* a, const Float* b, int64_t n) {
  Float acc = 0;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < n; ++i) acc += a[i] * b[i];
  return acc;
}

// y (n) += alpha * x (n)
template <typename Float>
inline void axpy(Float alpha, const Float* x, Float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

}  // namespace

template <typename Float>
void attention_forward(const Float* qkv, Float* out, Float* probs, int64_t B, int64_t T, int64_t C, int64_t NH) {
  const int64_t hs = C / NH;
  const int64_t C3 = 3 * C;
  const Float scale = Float(1) / std::sqrt(static_cast<Float>(hs));
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < NH; ++h) {
      const Float* q = qkv + b * T * C3 + h * hs;  // row t at q + t * C3
      const Float* k = q + C;
      const Float* v = q + 2 * C;
      for (int64_t t = 0; t < T; ++t) {
        Float* p = probs + ((b * NH + h) * T + t) * T;
        const Float* q_t = q + t * C3;
        Float row_max = -INFINITY;
        for (int64_t s = 0; s <= t; ++s) {
          p[s] = dot(q_t, k + s * C3, hs) * scale;
          row_max = std::max(row_max, p[s]);
        }
        Float sum = 0;
        for (int64_t s = 0; s <= t; ++s) {
          p[s] = std::exp(p[s] - row_max);
          sum += p[s];
        }
        const Float inv_sum = Float(1) / sum;
        for (int64_t s = 0; s <= t; ++s) p[s] *= inv_sum;
        for (int64_t s = t + 1; s < T; ++s) p[s] = 0;

        Float* out_t = out + (b * T + t) * C + h * hs;
        for (int64_t i = 0; i < hs; ++i) out_t[i] = 0;
        for (int64_t s = 0; s <= t; ++s) axpy(p[s], v + s * C3, out_t, hs);
      }
    }
  }
}

// With P = softmax(S), S = scale q kᵀ, out = P v:
//   dv_s += P[t,s] dout_t;  dP[t,s] = dout_t · v_s;  dS[t,s] = P[t,s] (dP[t,s] - sum_j P[t,j] dP[t,j]);
//   dq_t += scale dS[t,s] k_s;  dk_s += scale dS[t,s] q_t.
template <typename Float>
void attention_backward(const Float* dout, const Float* qkv, const Float* probs, Float* dqkv, int64_t B, int64_t T,
                        int64_t C, int64_t NH) {
  const int64_t hs = C / NH;
  const int64_t C3 = 3 * C;
  const Float scale = Float(1) / std::sqrt(static_cast<Float>(hs));
#pragma omp parallel
  {
    std::vector<Float> dp(static_cast<size_t>(T));  // dP for one query row
#pragma omp for collapse(2) schedule(static)
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t h = 0; h < NH; ++h) {
        const Float* q = qkv + b * T * C3 + h * hs;
        const Float* k = q + C;
        const Float* v = q + 2 * C;
        Float* dq = dqkv + b * T * C3 + h * hs;
        Float* dk = dq + C;
        Float* dv = dq + 2 * C;
        for (int64_t t = 0; t < T; ++t) {
          const Float* p = probs + ((b * NH + h) * T + t) * T;
          const Float* dout_t = dout + (b * T + t) * C + h * hs;
          Float weighted = 0;  // sum_s P[t,s] dP[t,s]
          for (int64_t s = 0; s <= t; ++s) {
            dp[s] = dot(dout_t, v + s * C3, hs);
            weighted += p[s] * dp[s];
            axpy(p[s], dout_t, dv + s * C3, hs);
          }
          const Float* q_t = q + t * C3;
          Float* dq_t = dq + t * C3;
          for (int64_t s = 0; s <= t; ++s) {
            const Float ds = p[s] * (dp[s] - weighted) * scale;
            axpy(ds, k + s * C3, dq_t, hs);
            axpy(ds, q_t, dk + s * C3, hs);
          }
        }
      }
    }
  }
}

template void attention_forward<float>(const float*, float*, float*, int64_t, int64_t, int64_t, int64_t);
template void attention_forward<double>(const double*, double*, double*, int64_t, int64_t, int64_t, int64_t);
template void attention_backward<float>(const float*, const float*, const float*, float*, int64_t, int64_t, int64_t,
                                        int64_t);
template void attention_backward<double>(const double*, const double*, const double*, double*, int64_t, int64_t,
                                         int64_t, int64_t);

}  // namespace nd::cpu

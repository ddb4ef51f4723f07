// CPU per-layer statistics: plain loops in double (the reference the CUDA kernels are tested
// against); rows of the entropy in parallel.
#include "kernels/cpu/layer_stats.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/cpu/scratch.h"

namespace nd::cpu {

template <typename T>
void tensor_stats(const std::vector<StatSlot<T>>& slots, double* out) {
  for (const StatSlot<T>& s : slots) {
    double sum = 0.0, bf16 = 0.0, fp16 = 0.0, gelu = 0.0;
#pragma omp parallel for reduction(+ : sum, bf16, fp16, gelu) schedule(static)
    for (int64_t i = 0; i < s.n; ++i) {
      const double x = static_cast<double>(s.x[i]);
      const double d = s.ref ? x - static_cast<double>(s.ref[i]) : x;
      const double a = std::fabs(x);
      sum += d * d;
      bf16 += (a > 0.0 && a <= kBf16FlushBelow) ? 1.0 : 0.0;
      fp16 += (a > 0.0 && a <= kFp16FlushBelow) ? 1.0 : 0.0;
      gelu += x < kGeluSaturatedBelow ? 1.0 : 0.0;
    }
    out[s.out + kSumOfSquares] += sum;
    out[s.out + kBf16Underflow] += bf16;
    out[s.out + kFp16Underflow] += fp16;
    out[s.out + kGeluSaturated] += gelu;
  }
}

// Each thread's row of scores (T_ doubles) is taken before the parallel region (scratch.h).
template <typename T>
void attention_entropy(const T* qkv, int64_t B, int64_t T_, int64_t C, int64_t NH, double* out) {
  const int64_t hs = C / NH;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hs));
  const PerThreadScratch<double> scores(static_cast<double>(T_), region_threads(B * T_),
                                        "attention entropy (a row of " + std::to_string(T_) + " scores per thread)");
  for (int64_t h = 0; h < NH; ++h) {
    double total = 0.0;
#pragma omp parallel for collapse(2) reduction(+ : total) schedule(static) num_threads(scores.threads())
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t t = 0; t < T_; ++t) {
        const T* q = qkv + (b * T_ + t) * 3 * C + h * hs;
        double* s = scores.slice(omp_get_thread_num());
        double max = -INFINITY;
        for (int64_t j = 0; j <= t; ++j) {
          const T* k = qkv + (b * T_ + j) * 3 * C + C + h * hs;
          double dot = 0.0;
          for (int64_t d = 0; d < hs; ++d) dot += static_cast<double>(q[d]) * static_cast<double>(k[d]);
          s[j] = dot * scale;
          max = std::max(max, s[j]);
        }
        // H = -sum p log p with p = e^(s - max) / Z: log Z - sum e^(s - max) (s - max) / Z.
        double z = 0.0, weighted = 0.0;
        for (int64_t j = 0; j <= t; ++j) {
          const double e = std::exp(s[j] - max);
          z += e;
          weighted += e * (s[j] - max);
        }
        total += std::log(z) - weighted / z;
      }
    }
    out[h] += total;
  }
}

template void tensor_stats<float>(const std::vector<StatSlot<float>>&, double*);
template void tensor_stats<double>(const std::vector<StatSlot<double>>&, double*);
template void attention_entropy<float>(const float*, int64_t, int64_t, int64_t, int64_t, double*);
template void attention_entropy<double>(const double*, int64_t, int64_t, int64_t, int64_t, double*);

}  // namespace nd::cpu

// The attention tests' independent reference: causal multi-head attention written from its
// definition in float64, one head and one query at a time, with an optional dropout mask.
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

namespace nd::test {

// Multiplier of probability (b, h, t, s) after dropout: 0 where dropped, 1 / (1 - p) where kept.
using DropoutScale = std::function<double(int64_t b, int64_t h, int64_t t, int64_t s)>;

// qkv (B, T, 3C) packed [q | k | v] -> (B, T, C): S = q kᵀ / sqrt(hs) masked to s <= t,
// P = softmax(S) row by row (no max shift: inputs are small), out = (P * scale) v.
inline std::vector<double> naive_attention(const std::vector<double>& qkv, int64_t B, int64_t T, int64_t C,
                                           int64_t NH, const DropoutScale& scale = nullptr) {
  const int64_t hs = C / NH;
  std::vector<double> out(B * T * C, 0.0);
  auto at = [&](int64_t b, int64_t t, int64_t part, int64_t h, int64_t i) {
    return qkv[(b * T + t) * 3 * C + part * C + h * hs + i];
  };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < NH; ++h)
      for (int64_t t = 0; t < T; ++t) {
        std::vector<double> weight(t + 1);
        double total = 0;
        for (int64_t s = 0; s <= t; ++s) {
          double score = 0;
          for (int64_t i = 0; i < hs; ++i) score += at(b, t, 0, h, i) * at(b, s, 1, h, i);
          weight[s] = std::exp(score / std::sqrt(static_cast<double>(hs)));
          total += weight[s];
        }
        for (int64_t s = 0; s <= t; ++s) {
          const double z = scale ? scale(b, h, t, s) : 1.0;
          for (int64_t i = 0; i < hs; ++i) out[(b * T + t) * C + h * hs + i] += weight[s] / total * z * at(b, s, 2, h, i);
        }
      }
  return out;
}

}  // namespace nd::test

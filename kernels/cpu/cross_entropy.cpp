// CPU fused cross-entropy, parallel over rows. Forward keeps only the per-row log-sum-exp; backward
// rebuilds the softmax from the logits and it, so no (N, Vp) probability buffer is ever stored.
// The forward with the gradient does both in one pass over each row.
#include "kernels/cpu/cross_entropy.h"

#include <algorithm>
#include <cmath>

#include "tensor/error.h"

namespace nd::cpu {

namespace {

// log(sum_j exp(x[j])) over the row's V valid columns, shifted by the row's maximum.
template <typename T>
T row_logsumexp(const T* x, int64_t V) {
  T row_max = x[0];
  for (int64_t j = 1; j < V; ++j) row_max = std::max(row_max, x[j]);
  T sum = 0;
  for (int64_t j = 0; j < V; ++j) sum += std::exp(x[j] - row_max);
  return row_max + std::log(sum);
}

}  // namespace

int64_t count_cross_entropy_targets(const int32_t* targets, int64_t N, int64_t V) {
  // Serial on purpose: the check throws, which must not happen inside an OpenMP region.
  int64_t count = 0;
  for (int64_t row = 0; row < N; ++row) {
    const int32_t target = targets[row];
    if (target == -1) continue;
    ND_CHECK(target >= 0 && target < V, "cross_entropy: target " << target << " at row " << row
                                                                 << " is outside the vocabulary [0, " << V
                                                                 << ") and is not -1 (ignore)");
    ++count;
  }
  return count;
}

template <typename T>
void cross_entropy_forward(const T* logits, const int32_t* targets, StatType<T>* loss, StatType<T>* row_lse,
                           StatType<T>* count, int64_t N, int64_t Vp, int64_t V) {
  ND_CHECK(V >= 1 && V <= Vp, "cross_entropy: valid vocabulary " << V << " must be in [1, " << Vp << "]");
  const int64_t counted = count_cross_entropy_targets(targets, N, V);
  double total = 0;  // summed in double: N can be tens of thousands of rows
#pragma omp parallel for reduction(+ : total) schedule(static)
  for (int64_t row = 0; row < N; ++row) {
    const T* x = logits + row * Vp;
    const T lse = row_logsumexp(x, V);
    row_lse[row] = lse;
    if (targets[row] != -1) total += static_cast<double>(lse - x[targets[row]]);
  }
  *loss = counted > 0 ? static_cast<StatType<T>>(total / static_cast<double>(counted)) : StatType<T>(0);
  *count = static_cast<StatType<T>>(counted);
}

template <typename T>
void cross_entropy_backward(const T* logits, const int32_t* targets, const StatType<T>* row_lse,
                            const StatType<T>* count, const StatType<T>* dloss, GradDest<T> dlogits, int64_t N,
                            int64_t Vp, int64_t V) {
  ND_CHECK(V >= 1 && V <= Vp, "cross_entropy: valid vocabulary " << V << " must be in [1, " << Vp << "]");
  if (dlogits.ptr == nullptr) return;
  const T factor = *count > 0 ? *dloss / *count : T(0);
  const bool accumulate = dlogits.accumulate;
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < N; ++row) {
    const int32_t target = targets[row];
    T* dx = dlogits.ptr + row * Vp;
    if (!accumulate) std::fill(dx, dx + Vp, T(0));
    if (target == -1) continue;
    const T* x = logits + row * Vp;
    const T lse = row_lse[row];
    for (int64_t j = 0; j < V; ++j) dx[j] += std::exp(x[j] - lse) * factor;
    dx[target] -= factor;
  }
}

template <typename T>
void cross_entropy_forward_with_grad(const T* logits, const int32_t* targets, const StatType<T>* dloss,
                                     StatType<T>* loss, StatType<T>* row_lse, StatType<T>* count, T* dlogits,
                                     int64_t N, int64_t Vp, int64_t V) {
  ND_CHECK(V >= 1 && V <= Vp, "cross_entropy: valid vocabulary " << V << " must be in [1, " << Vp << "]");
  const int64_t counted = count_cross_entropy_targets(targets, N, V);
  // cross_entropy_backward's factor, from the same numbers, so the two paths agree bit for bit.
  const T counted_t = static_cast<T>(counted);
  const T factor = counted > 0 ? *dloss / counted_t : T(0);
  double total = 0;
#pragma omp parallel for reduction(+ : total) schedule(static)
  for (int64_t row = 0; row < N; ++row) {
    const T* x = logits + row * Vp;
    T* dx = dlogits + row * Vp;  // may be x: each element is read before it is written
    const T lse = row_logsumexp(x, V);
    row_lse[row] = lse;
    const int32_t target = targets[row];
    if (target == -1) {
      std::fill(dx, dx + Vp, T(0));
      continue;
    }
    total += static_cast<double>(lse - x[target]);
    for (int64_t j = 0; j < V; ++j) dx[j] = std::exp(x[j] - lse) * factor;
    std::fill(dx + V, dx + Vp, T(0));
    dx[target] -= factor;
  }
  *loss = counted > 0 ? static_cast<StatType<T>>(total / static_cast<double>(counted)) : StatType<T>(0);
  *count = counted_t;
}

template <typename T>
void cross_entropy_rescale_grad(const StatType<T>* dloss, const StatType<T>* announced, T* dlogits, int64_t n) {
  const T factor = *dloss / *announced;  // announced 0: the gradient was lost, NaN says so
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) dlogits[i] *= factor;
}

#define ND_INSTANTIATE_CROSS_ENTROPY(T)                                                                         \
  template void cross_entropy_forward<T>(const T*, const int32_t*, T*, T*, T*, int64_t, int64_t, int64_t);      \
  template void cross_entropy_backward<T>(const T*, const int32_t*, const T*, const T*, const T*, GradDest<T>,  \
                                          int64_t, int64_t, int64_t);                                           \
  template void cross_entropy_forward_with_grad<T>(const T*, const int32_t*, const T*, T*, T*, T*, T*, int64_t, \
                                                   int64_t, int64_t);                                           \
  template void cross_entropy_rescale_grad<T>(const T*, const T*, T*, int64_t)
ND_CPU_INSTANTIATE(ND_INSTANTIATE_CROSS_ENTROPY);

}  // namespace nd::cpu

// CPU vocabulary-parallel cross-entropy, parallel over rows. At one rank holding the whole
// vocabulary it performs the same operations in the same order as kernels/cpu/cross_entropy.cpp,
// so it gives the same bits.
#include "kernels/cpu/vocab_parallel_cross_entropy.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/cross_entropy.h"
#include "tensor/error.h"

namespace nd::cpu {

namespace {

void check_dims(const char* what, int64_t N, int64_t Vl, int64_t valid, int64_t vocab_start) {
  ND_CHECK(N >= 0 && Vl >= 1 && valid >= 0 && valid <= Vl && vocab_start >= 0,
           what << ": bad shape N=" << N << " Vl=" << Vl << " valid=" << valid << " vocab_start=" << vocab_start);
}

}  // namespace

template <typename T>
void vocab_parallel_ce_local_stats(const T* logits, const int32_t* targets, T* row_max, T* stats, int64_t N,
                                   int64_t Vl, int64_t valid, int64_t vocab_start) {
  check_dims("vocab_parallel_ce_local_stats", N, Vl, valid, vocab_start);
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < N; ++row) {
    const T* x = logits + row * Vl;
    T m = -INFINITY;
    for (int64_t j = 0; j < valid; ++j) m = std::max(m, x[j]);
    T sum = 0;
    for (int64_t j = 0; j < valid; ++j) sum += std::exp(x[j] - m);
    const int64_t local_target = static_cast<int64_t>(targets[row]) - vocab_start;
    const bool mine = targets[row] != -1 && local_target >= 0 && local_target < valid;
    row_max[row] = m;
    row_max[N + row] = m;
    stats[row] = sum;
    stats[N + row] = mine ? x[local_target] : T(0);
  }
}

template <typename T>
void vocab_parallel_ce_rescale(const T* row_max, T* stats, int64_t N) {
  ND_CHECK(N >= 0, "vocab_parallel_ce_rescale: bad N=" << N);
#pragma omp parallel for schedule(static) if (N >= (1 << 14))
  for (int64_t row = 0; row < N; ++row) {
    const T local = row_max[row], global = row_max[N + row];
    if (local == global) continue;  // also the one-rank case: no rounding from a factor of 1
    stats[row] = local == -INFINITY ? T(0) : stats[row] * std::exp(local - global);
  }
}

template <typename T>
void vocab_parallel_ce_loss(const T* row_max, const T* stats, const int32_t* targets, T* loss, T* row_lse, T* count,
                            int64_t N, int64_t V) {
  ND_CHECK(N >= 0 && V >= 1, "vocab_parallel_ce_loss: bad shape N=" << N << " V=" << V);
  const int64_t counted = count_cross_entropy_targets(targets, N, V);
  double total = 0;  // summed in double: N can be tens of thousands of rows
#pragma omp parallel for reduction(+ : total) schedule(static)
  for (int64_t row = 0; row < N; ++row) {
    const T lse = row_max[N + row] + std::log(stats[row]);
    row_lse[row] = lse;
    if (targets[row] != -1) total += static_cast<double>(lse - stats[N + row]);
  }
  *loss = counted > 0 ? static_cast<T>(total / static_cast<double>(counted)) : T(0);
  *count = static_cast<T>(counted);
}

template <typename T>
void vocab_parallel_ce_backward(const T* logits, const int32_t* targets, const T* row_lse, const T* count,
                                const StatType<T>* dloss, T* dlogits, int64_t N, int64_t Vl, int64_t valid,
                                int64_t vocab_start, bool accumulate) {
  check_dims("vocab_parallel_ce_backward", N, Vl, valid, vocab_start);
  if (dlogits == nullptr) return;
  if (!accumulate) std::fill(dlogits, dlogits + N * Vl, T(0));
  if (*count == T(0)) return;
  const T factor = *dloss / *count;
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < N; ++row) {
    if (targets[row] == -1) continue;
    const T* x = logits + row * Vl;
    T* dx = dlogits + row * Vl;
    const T lse = row_lse[row];
    for (int64_t j = 0; j < valid; ++j) dx[j] += std::exp(x[j] - lse) * factor;
    const int64_t local_target = static_cast<int64_t>(targets[row]) - vocab_start;
    if (local_target >= 0 && local_target < valid) dx[local_target] -= factor;
  }
}

#define ND_INSTANTIATE_VOCAB_PARALLEL_CE(T)                                                                         \
  template void vocab_parallel_ce_local_stats<T>(const T*, const int32_t*, T*, T*, int64_t, int64_t, int64_t,       \
                                                 int64_t);                                                         \
  template void vocab_parallel_ce_rescale<T>(const T*, T*, int64_t);                                               \
  template void vocab_parallel_ce_loss<T>(const T*, const T*, const int32_t*, T*, T*, T*, int64_t, int64_t);        \
  template void vocab_parallel_ce_backward<T>(const T*, const int32_t*, const T*, const T*, const T*, T*, int64_t,   \
                                              int64_t, int64_t, int64_t, bool)
ND_INSTANTIATE_VOCAB_PARALLEL_CE(float);
ND_INSTANTIATE_VOCAB_PARALLEL_CE(double);

}  // namespace nd::cpu

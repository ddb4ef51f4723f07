// The CPU AdamW update of a span of f32 elements, vectorised: this file is compiled with
// -fno-math-errno (so std::sqrt is one instruction and the loop vectorises) and -ffp-contract=off
// (no fused multiply-add), and on x86-64 it is cloned for AVX-512, AVX2 and the baseline, chosen
// at load time. Every lane does adamw_element's IEEE operations in its order: the same bits.
#include "kernels/cpu/adamw_element.h"

namespace nd::cpu {

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ND_ADAMW_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ND_ADAMW_CLONES
#endif

ND_ADAMW_CLONES void adamw_update_span(const AdamWScalars<float>& s, float* __restrict param,
                                       const float* __restrict grad, float* __restrict m, float* __restrict v,
                                       int64_t n) {
  const AdamWScalars<float> k = s;  // by value, so the loop need not reload it through a pointer
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) adamw_element(k, param[i], grad[i], m[i], v[i]);
}

}  // namespace nd::cpu

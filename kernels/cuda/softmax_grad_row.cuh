// One row of a cross-entropy gradient, written by the threads of one block: the fused and the
// vocabulary-parallel cross-entropy backward differ only in which columns and target they see.
#pragma once
#include "kernels/cuda/common.cuh"

namespace nd::cuda {

// drow[c] (+)= (exp(row[c] - lse) - [c == target]) * scale for c in [0, valid), nothing when the
// row is not counted. With accumulate only [0, valid) is touched; without, the whole row
// [0, width) is written (zeros past valid and for an uncounted row). vec: 16-byte packs (width a
// multiple of the pack, rows aligned).
template <typename T>
__device__ __forceinline__ void softmax_grad_row(const T* row, T* drow, int64_t width, int64_t valid, int64_t target,
                                                 float lse, float scale, bool counted, bool vec, bool accumulate) {
  constexpr int kPack = Pack16<T>::kSize;
  const float lse2 = lse * kLog2e;
  const int64_t end = accumulate ? valid : width;
  auto grad = [&](int64_t c, float x) {
    if (!counted || c >= valid) return 0.0f;
    return (exp2f(x * kLog2e - lse2) - (c == target ? 1.0f : 0.0f)) * scale;
  };
  if (vec) {
    for (int64_t c = static_cast<int64_t>(threadIdx.x) * kPack; c < end;
         c += static_cast<int64_t>(blockDim.x) * kPack) {
      Pack16<T> x = load16(row + c);
      Pack16<T> d;
      if (accumulate) d = load16(drow + c);
#pragma unroll
      for (int k = 0; k < kPack; ++k) {
        const float g = grad(c + k, to_f32(x.v[k]));
        if (accumulate) {
          if (c + k < valid) d.v[k] = from_f32<T>(to_f32(d.v[k]) + g);
        } else {
          d.v[k] = from_f32<T>(g);
        }
      }
      store16(drow + c, d);
    }
  } else {
    for (int64_t c = threadIdx.x; c < end; c += blockDim.x) {
      const float g = grad(c, to_f32(row[c]));
      drow[c] = from_f32<T>(accumulate ? to_f32(drow[c]) + g : g);
    }
  }
}

}  // namespace nd::cuda

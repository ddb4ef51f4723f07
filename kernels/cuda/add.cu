// Residual add and in-place accumulation, 16-byte-vectorised elementwise kernels.
#include "kernels/cuda/add.h"
#include "kernels/cuda/elementwise.cuh"

namespace nd::cuda {

namespace {

template <typename T>
struct AddOp {
  const T* a;
  const T* b;
  T* out;
  bool vec;
  template <int kPack>
  __device__ void pack(int64_t i) const {
    float x[kPack], y[kPack];
    load_f32<kPack>(a + i, x, vec);
    load_f32<kPack>(b + i, y, vec);
#pragma unroll
    for (int k = 0; k < kPack; ++k) x[k] += y[k];
    store_f32<kPack>(out + i, x, vec);
  }
};

}  // namespace

template <typename T>
void add_forward(const T* a, const T* b, T* out, int64_t n, cudaStream_t stream) {
  ND_CHECK(n >= 0, "add_forward: negative size " << n);
  ND_CHECK(n == 0 || (a && b && out), "add_forward: null pointer");
  bool vec = aligned16(a) && aligned16(b) && aligned16(out);
  launch_elementwise<T>(n, AddOp<T>{a, b, out, vec}, stream);
}

template <typename T>
void accumulate(T* dst, const T* src, int64_t n, cudaStream_t stream) {
  ND_CHECK(n >= 0, "accumulate: negative size " << n);
  ND_CHECK(n == 0 || (dst && src), "accumulate: null pointer");
  bool vec = aligned16(dst) && aligned16(src);
  launch_elementwise<T>(n, AddOp<T>{dst, src, dst, vec}, stream);
}

#define ND_INSTANTIATE_ADD(T)                                                  \
  template void add_forward<T>(const T*, const T*, T*, int64_t, cudaStream_t); \
  template void accumulate<T>(T*, const T*, int64_t, cudaStream_t)
ND_CUDA_INSTANTIATE(ND_INSTANTIATE_ADD);

}  // namespace nd::cuda

// GELU forward/backward as 16-byte-vectorised elementwise kernels, f32 math for every type.
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/gelu.cuh"
#include "kernels/cuda/gelu.h"

namespace nd::cuda {

namespace {

template <typename T>
struct GeluForward {
  const T* x;
  T* out;
  bool vec;
  template <int kPack>
  __device__ void pack(int64_t i) const {
    float v[kPack];
    load_f32<kPack>(x + i, v, vec);
#pragma unroll
    for (int k = 0; k < kPack; ++k) v[k] = gelu_math::gelu(v[k]);
    store_f32<kPack>(out + i, v, vec);
  }
};

template <typename T>
struct GeluBackward {
  const T* x;
  const T* dout;
  T* dx;
  bool accumulate, vec;
  template <int kPack>
  __device__ void pack(int64_t i) const {
    float xv[kPack], g[kPack];
    load_f32<kPack>(x + i, xv, vec);
    load_f32<kPack>(dout + i, g, vec);
#pragma unroll
    for (int k = 0; k < kPack; ++k) g[k] *= gelu_math::gelu_grad(xv[k]);
    store_grad_f32<kPack>(dx + i, g, accumulate, vec);
  }
};

}  // namespace

template <typename T>
void gelu_forward(const T* x, T* out, int64_t n, cudaStream_t stream) {
  ND_CHECK(n >= 0, "gelu_forward: negative size " << n);
  ND_CHECK(n == 0 || (x && out), "gelu_forward: null pointer");
  launch_elementwise<T>(n, GeluForward<T>{x, out, aligned16(x) && aligned16(out)}, stream);
}

template <typename T>
void gelu_backward(const T* x, const T* dout, GradDest<T> dx, int64_t n, cudaStream_t stream) {
  ND_CHECK(n >= 0, "gelu_backward: negative size " << n);
  if (dx.ptr == nullptr) return;
  ND_CHECK(n == 0 || (dout && x), "gelu_backward: null pointer");
  bool vec = aligned16(dout) && aligned16(x) && aligned16(dx.ptr);
  launch_elementwise<T>(n, GeluBackward<T>{x, dout, dx.ptr, dx.accumulate, vec}, stream);
}

#define ND_INSTANTIATE_GELU(T)                                                   \
  template void gelu_forward<T>(const T*, T*, int64_t, cudaStream_t);           \
  template void gelu_backward<T>(const T*, const T*, GradDest<T>, int64_t, cudaStream_t)
ND_CUDA_INSTANTIATE(ND_INSTANTIATE_GELU);

}  // namespace nd::cuda

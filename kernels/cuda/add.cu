// Residual add and its backward, 16-byte-vectorised elementwise kernels.
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

// dx (+)= dout.
template <typename T>
struct PassGradOp {
  const T* dout;
  T* dx;
  bool accumulate, vec;
  template <int kPack>
  __device__ void pack(int64_t i) const {
    float g[kPack];
    load_f32<kPack>(dout + i, g, vec);
    store_grad_f32<kPack>(dx + i, g, accumulate, vec);
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
void add_backward(const T* dout, GradDest<T> da, GradDest<T> db, int64_t n, cudaStream_t stream) {
  ND_CHECK(n >= 0, "add_backward: negative size " << n);
  ND_CHECK(n == 0 || dout, "add_backward: null pointer");
  for (const GradDest<T>& d : {da, db}) {
    if (d.ptr == nullptr) continue;
    bool vec = aligned16(dout) && aligned16(d.ptr);
    launch_elementwise<T>(n, PassGradOp<T>{dout, d.ptr, d.accumulate, vec}, stream);
  }
}

#define ND_INSTANTIATE_ADD(T)                                                  \
  template void add_forward<T>(const T*, const T*, T*, int64_t, cudaStream_t); \
  template void add_backward<T>(const T*, GradDest<T>, GradDest<T>, int64_t, cudaStream_t)
ND_CUDA_INSTANTIATE(ND_INSTANTIATE_ADD);

}  // namespace nd::cuda

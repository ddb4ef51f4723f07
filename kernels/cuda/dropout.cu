// Dropout forward/backward: the keep mask comes from Philox per element (tensor/philox.h), so
// nothing is stored between forward and backward. Each thread reads the draw's first counter when
// it runs (PhiloxCounters::start), so a captured kernel draws new masks on every graph replay.
#include "kernels/cuda/dropout.h"
#include "kernels/cuda/elementwise.cuh"
#include "tensor/philox.h"

namespace nd::cuda {

namespace {

// out = mask(x) * x * scale, or with `accumulate` out += mask(x) * x * scale.
template <typename T>
struct DropoutOp {
  const T* x;
  T* out;
  float p, scale;
  PhiloxCounters rng;
  bool accumulate, vec;
  template <int kPack>
  __device__ void pack(int64_t i) const {
    float v[kPack];
    load_f32<kPack>(x + i, v, vec);
    const uint64_t first = rng.start();
#pragma unroll
    for (int k = 0; k < kPack; ++k) {
      bool keep = philox_uniform(rng.seed, first + i + k, rng.stream) >= p;
      v[k] = keep ? v[k] * scale : 0.0f;
    }
    store_grad_f32<kPack>(out + i, v, accumulate, vec);
  }
};

void check_args(const char* what, int64_t n, float p, const void* a, const void* b) {
  ND_CHECK(n >= 0, what << ": negative size " << n);
  ND_CHECK(p >= 0.0f && p <= 1.0f, what << ": p = " << p << " is outside [0, 1]");
  ND_CHECK(n == 0 || (a && b), what << ": null pointer");
}

}  // namespace

template <typename T>
void dropout_forward(const T* x, T* out, int64_t n, float p, const PhiloxCounters& rng, cudaStream_t stream) {
  check_args("dropout_forward", n, p, x, out);
  float scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
  DropoutOp<T> op{x, out, p, scale, rng, false, aligned16(x) && aligned16(out)};
  launch_elementwise<T>(n, op, stream);
}

template <typename T>
void dropout_backward(const T* dout, GradDest<T> dx, int64_t n, float p, const PhiloxCounters& rng,
                      cudaStream_t stream) {
  if (dx.ptr == nullptr) return;
  check_args("dropout_backward", n, p, dout, dx.ptr);
  float scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
  DropoutOp<T> op{dout, dx.ptr, p, scale, rng, dx.accumulate, aligned16(dout) && aligned16(dx.ptr)};
  launch_elementwise<T>(n, op, stream);
}

#define ND_INSTANTIATE_DROPOUT(T)                                                                          \
  template void dropout_forward<T>(const T*, T*, int64_t, float, const PhiloxCounters&, cudaStream_t); \
  template void dropout_backward<T>(const T*, GradDest<T>, int64_t, float, const PhiloxCounters&, cudaStream_t)
ND_CUDA_INSTANTIATE(ND_INSTANTIATE_DROPOUT);

}  // namespace nd::cuda

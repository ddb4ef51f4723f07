// The GEMM load of gemm_load.h: three bf16 buffers filled with small non-zero values, a
// non-blocking stream at the default priority (as the compute stream; the comm streams are above
// it), and K GEMMs queued per window with events at the first one's end (the load is running) and
// at the last one's (still running when the window ended?).
#include "lab/gemm_load.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tensor/error.h"
#if NANODIST_WITH_CUDA
#include <cuda_runtime.h>

#include "kernels/cuda/linear.h"
#include "tensor/cuda_check.h"
#include "tensor/dtype.h"
#endif

namespace nd::lab {

GemmShape parse_gemm_shape(const std::string& text) {
  long long m = 0, n = 0, k = 0;
  char rest = 0;
  const int read = std::sscanf(text.c_str(), "%lldx%lldx%lld%c", &m, &n, &k, &rest);
  ND_CHECK_INPUT(read == 3 && m >= 1 && n >= 1 && k >= 1 && m <= 65536 && n <= 65536 && k <= 65536,
                 "--load-shape must be MxNxK with each from 1 to 65536 (e.g. 8192x8192x8192), got '" << text << "'");
  return {m, n, k};
}

#if NANODIST_WITH_CUDA
namespace {

class GemmLoad : public dist::BenchLoad {
 public:
  GemmLoad(Device device, const GemmShape& shape) : device_(device), shape_(shape) {
    CUDA_CHECK(cudaSetDevice(device.index));
    const size_t a = static_cast<size_t>(shape.m * shape.k), b = static_cast<size_t>(shape.n * shape.k),
                 c = static_cast<size_t>(shape.m * shape.n);
    CUDA_CHECK(cudaMalloc(&x_, a * sizeof(bf16)));
    CUDA_CHECK(cudaMalloc(&w_, b * sizeof(bf16)));
    CUDA_CHECK(cudaMalloc(&out_, c * sizeof(bf16)));
    // Bytes of 0x3C: every element 0x3C3C, about 0.0115 (not zero, so the GEMM draws full power;
    // sums of K products stay far from bf16's range).
    CUDA_CHECK(cudaMemset(x_, 0x3C, a * sizeof(bf16)));
    CUDA_CHECK(cudaMemset(w_, 0x3C, b * sizeof(bf16)));
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreate(&running_));
    CUDA_CHECK(cudaEventCreate(&done_));
    // One untimed GEMM (cuBLASLt picks its algorithm), then three timed.
    gemm();
    CUDA_CHECK(cudaEventRecord(running_, stream_));
    for (int i = 0; i < 3; ++i) gemm();
    CUDA_CHECK(cudaEventRecord(done_, stream_));
    CUDA_CHECK(cudaEventSynchronize(done_));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, running_, done_));
    gemm_seconds_ = ms * 1e-3 / 3;
  }

  ~GemmLoad() override {
    cudaStreamSynchronize(stream_);
    cudaEventDestroy(running_);
    cudaEventDestroy(done_);
    cudaStreamDestroy(stream_);
    cudaFree(x_);
    cudaFree(w_);
    cudaFree(out_);
  }

  void start(int iters) override {
    const double window = std::min(kMaxLoadSeconds, std::max(2e-3, 3.0 * per_call_seconds_ * iters) * stretch_);
    const int gemms = std::min(kMaxLoadGemms, 2 + static_cast<int>(std::ceil(window / gemm_seconds_)));
    gemm();
    CUDA_CHECK(cudaEventRecord(running_, stream_));
    for (int i = 1; i < gemms; ++i) gemm();
    CUDA_CHECK(cudaEventRecord(done_, stream_));
    CUDA_CHECK(cudaEventSynchronize(running_));  // the first GEMM ended: the second one runs now
  }

  bool finish(double seconds_per_call) override {
    const cudaError_t state = cudaEventQuery(done_);
    ND_CHECK(state == cudaSuccess || state == cudaErrorNotReady, "GEMM load: " << cudaGetErrorString(state));
    const bool covered = state == cudaErrorNotReady;
    if (covered) (void)cudaGetLastError();  // "not ready" is an answer, not an error: keep it from the next check
    CUDA_CHECK(cudaEventSynchronize(done_));
    // Uncovered, the time is partly unloaded, so at most the loaded one: still the best guess so far.
    per_call_seconds_ = covered ? seconds_per_call : std::max(per_call_seconds_, seconds_per_call);
    if (covered) {
      stretch_ = 1.0;
    } else {
      stretch_ = std::min(stretch_ * 2.0, 16.0);  // the bounds in start() cap the window anyway
    }
    return covered;
  }

  std::string describe() const override {
    char text[160];
    std::snprintf(text, sizeof text, "bf16 GEMM %lldx%lldx%lld back to back on another stream (%.1f us, %.0f TFLOP/s alone)",
                  static_cast<long long>(shape_.m), static_cast<long long>(shape_.n), static_cast<long long>(shape_.k),
                  gemm_seconds_ * 1e6,
                  2.0 * static_cast<double>(shape_.m) * static_cast<double>(shape_.n) * static_cast<double>(shape_.k) /
                      gemm_seconds_ / 1e12);
    return text;
  }

 private:
  // out (M, N) = x (M, K) · w (N, K)ᵀ: the linear layer's product.
  void gemm() { cuda::linear_forward<bf16>(x_, w_, nullptr, out_, shape_.m, shape_.n, shape_.k, stream_); }

  Device device_;
  GemmShape shape_;
  bf16* x_ = nullptr;
  bf16* w_ = nullptr;
  bf16* out_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t running_ = nullptr, done_ = nullptr;
  double gemm_seconds_ = 1e-3;
  double per_call_seconds_ = 0;
  double stretch_ = 1.0;
};

}  // namespace
#endif

std::unique_ptr<dist::BenchLoad> make_gemm_load(Device device, const GemmShape& shape) {
  ND_CHECK_INPUT(device.is_cuda(), "--load gemm needs --device cuda (a GEMM on the GPU beside the collectives)");
#if NANODIST_WITH_CUDA
  return std::make_unique<GemmLoad>(device, shape);
#else
  (void)shape;
  ND_FAIL_INPUT("--load gemm needs a CUDA build");
#endif
}

}  // namespace nd::lab

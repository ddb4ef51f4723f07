// Attention launchers: argument checks, the backward's delta = rowsum(dout * out) pre-pass, and the
// choice between the tensor-core kernels (bf16, head size 64 or 128) and the simple ones.
#include "kernels/cuda/attention.h"
#include "kernels/cuda/attention_mma.cuh"
#include "kernels/cuda/attention_simple.cuh"
#include "kernels/cuda/common.cuh"
#include "tensor/storage.h"

namespace nd::cuda {

namespace {

// delta[b, h, t] = sum_d dout[b, t, h*hs + d] * out[b, t, h*hs + d]; a warp per (b, t, h).
template <typename T>
__global__ void attention_delta_kernel(const T* dout, const T* out, float* delta, int64_t B, int64_t T_len,
                                       int64_t NH, int hs) {
  int64_t task = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;  // (b, t, h)
  int lane = threadIdx.x % 32;
  if (task >= B * T_len * NH) return;
  int64_t h = task % NH, bt = task / NH, b = bt / T_len, t = bt % T_len;
  const T* g = dout + bt * NH * hs + h * hs;
  const T* o = out + bt * NH * hs + h * hs;
  float acc = 0.0f;
  for (int d = lane; d < hs; d += 32) acc += to_f32(g[d]) * to_f32(o[d]);
  acc = warp_sum(acc);
  if (lane == 0) delta[(b * NH + h) * T_len + t] = acc;
}

void check_dims(const char* what, int64_t B, int64_t T_len, int64_t C, int64_t NH) {
  ND_CHECK(B >= 0 && T_len >= 0 && C > 0 && NH > 0 && C % NH == 0,
           what << ": bad shape B=" << B << " T=" << T_len << " C=" << C << " NH=" << NH);
  int64_t hs = C / NH;
  ND_CHECK(hs % 8 == 0 && hs <= kMaxAttentionHeadSize,
           what << ": head size " << hs << " (C=" << C << ", NH=" << NH << ") is not supported on CUDA: it must be a "
                << "multiple of 8 and at most " << kMaxAttentionHeadSize);
  ND_CHECK(B * NH < 65536 && T_len < (int64_t{1} << 30), what << ": B*NH=" << B * NH << " or T=" << T_len
                                                               << " is too large for one launch");
}

void check_dropout(const char* what, const AttentionDropout& dropout) {
  ND_CHECK(dropout.p >= 0.0f && dropout.p <= 1.0f, what << ": dropout p = " << dropout.p << " is outside [0, 1]");
}

template <typename T>
bool use_mma(int64_t hs) {
  return std::is_same<T, nd::bf16>::value && detail::attention_mma_supports(hs);
}

}  // namespace

template <typename T>
void attention_forward(const T* qkv, T* out, StatType<T>* lse, int64_t B, int64_t T_len, int64_t C, int64_t NH,
                       const AttentionDropout& dropout, cudaStream_t stream) {
  check_dims("attention_forward", B, T_len, C, NH);
  check_dropout("attention_forward", dropout);
  if (B * T_len == 0) return;
  ND_CHECK(qkv && out && lse, "attention_forward: null pointer");
  stream = stream_or_default(stream);
  if constexpr (std::is_same<T, nd::bf16>::value) {
    if (use_mma<T>(C / NH) && aligned16(qkv) && aligned16(out)) {
      detail::attention_forward_mma(qkv, out, lse, B, T_len, C, NH, dropout, stream);
      return;
    }
  }
  detail::attention_forward_simple(qkv, out, lse, B, T_len, C, NH, dropout, stream);
}

template <typename T>
void attention_backward(const T* dout, const T* qkv, const T* out, const StatType<T>* lse, GradDest<T> dqkv,
                        int64_t B, int64_t T_len, int64_t C, int64_t NH, const AttentionDropout& dropout,
                        cudaStream_t stream) {
  check_dims("attention_backward", B, T_len, C, NH);
  check_dropout("attention_backward", dropout);
  if (B * T_len == 0 || dqkv.ptr == nullptr) return;
  ND_CHECK(dout && qkv && out && lse, "attention_backward: null pointer");
  stream = stream_or_default(stream);
  int device = current_cuda_device();
  int64_t rows = B * NH * T_len;
  float* delta = static_cast<float*>(device_alloc(rows * sizeof(float), device));
  constexpr int kWarps = 8;
  attention_delta_kernel<T><<<static_cast<unsigned>(ceil_div(rows, kWarps)), kWarps * 32, 0, stream>>>(
      dout, out, delta, B, T_len, NH, static_cast<int>(C / NH));
  CUDA_CHECK(cudaGetLastError());
  bool done = false;
  if constexpr (std::is_same<T, nd::bf16>::value) {
    if (use_mma<T>(C / NH) && aligned16(dout) && aligned16(qkv) && aligned16(dqkv.ptr)) {
      detail::attention_backward_mma(dout, qkv, lse, delta, dqkv, B, T_len, C, NH, dropout, stream);
      done = true;
    }
  }
  if (!done) detail::attention_backward_simple(dout, qkv, lse, delta, dqkv, B, T_len, C, NH, dropout, stream);
  device_free(delta, device);  // reused only by later work on this stream
}

#define ND_INSTANTIATE_ATTENTION(T)                                                                        \
  template void attention_forward<T>(const T*, T*, float*, int64_t, int64_t, int64_t, int64_t,              \
                                     const AttentionDropout&, cudaStream_t);                                \
  template void attention_backward<T>(const T*, const T*, const T*, const float*, GradDest<T>, int64_t,    \
                                      int64_t, int64_t, int64_t, const AttentionDropout&, cudaStream_t)
ND_CUDA_INSTANTIATE(ND_INSTANTIATE_ATTENTION);

}  // namespace nd::cuda

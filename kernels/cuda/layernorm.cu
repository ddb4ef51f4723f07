// Layer norm kernels. Forward: a warp per row, two passes over the row (mean, then variance of the
// centred values) read from L1/L2. Backward: a warp per row for dx; dw and db in two deterministic
// steps: per-slab partial column sums (f32), then a fixed-order sum of the slabs.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/layernorm.h"
#include "tensor/storage.h"

namespace nd::cuda {

namespace {

constexpr int kWarpsPerBlock = 8;

template <typename T>
__global__ void layernorm_forward_kernel(const T* x, const T* w, const T* b, T* out, float* mean, float* rstd,
                                         int64_t N, int C, float eps) {
  int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= N) return;
  const T* xr = x + row * C;
  float sum = 0.0f;
  for (int c = lane; c < C; c += 32) sum += to_f32(xr[c]);
  float mu = warp_sum(sum) / C;
  float sq = 0.0f;
  for (int c = lane; c < C; c += 32) {
    float d = to_f32(xr[c]) - mu;
    sq += d * d;
  }
  float rs = rsqrtf(warp_sum(sq) / C + eps);
  T* orow = out + row * C;
  for (int c = lane; c < C; c += 32) {
    float n = (to_f32(xr[c]) - mu) * rs;
    orow[c] = from_f32<T>(n * to_f32(w[c]) + to_f32(b[c]));
  }
  if (lane == 0) {
    mean[row] = mu;
    rstd[row] = rs;
  }
}

// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dout * w.
template <typename T>
__global__ void layernorm_dx_kernel(const T* dout, const T* x, const T* w, const float* mean, const float* rstd,
                                    T* dx, int64_t N, int C) {
  int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= N) return;
  const T* xr = x + row * C;
  const T* gr = dout + row * C;
  float mu = mean[row], rs = rstd[row];
  float sum_g = 0.0f, sum_gx = 0.0f;
  for (int c = lane; c < C; c += 32) {
    float g = to_f32(gr[c]) * to_f32(w[c]);
    sum_g += g;
    sum_gx += g * (to_f32(xr[c]) - mu) * rs;
  }
  float mean_g = warp_sum(sum_g) / C, mean_gx = warp_sum(sum_gx) / C;
  T* dr = dx + row * C;
  for (int c = lane; c < C; c += 32) {
    float g = to_f32(gr[c]) * to_f32(w[c]);
    float xhat = (to_f32(xr[c]) - mu) * rs;
    dr[c] = from_f32<T>(to_f32(dr[c]) + rs * (g - mean_g - xhat * mean_gx));
  }
}

constexpr int kColumnsPerBlock = 32;
constexpr int kRowThreads = 8;

// Block (32 columns, 8 row lanes) sums dout * xhat and dout over rows [slab * rows, ...) in a fixed
// order -> partial_dw[slab][c], partial_db[slab][c].
template <typename T>
__global__ void layernorm_dwdb_partial_kernel(const T* dout, const T* x, const float* mean, const float* rstd,
                                              float* partial_dw, float* partial_db, int64_t N, int C,
                                              int64_t rows_per_slab) {
  __shared__ float sdw[kRowThreads][kColumnsPerBlock];
  __shared__ float sdb[kRowThreads][kColumnsPerBlock];
  int c = blockIdx.x * kColumnsPerBlock + threadIdx.x;
  int64_t begin = blockIdx.y * rows_per_slab;
  int64_t end = min(N, begin + rows_per_slab);
  float acc_w = 0.0f, acc_b = 0.0f;
  if (c < C) {
    for (int64_t r = begin + threadIdx.y; r < end; r += kRowThreads) {
      float g = to_f32(dout[r * C + c]);
      acc_w += g * (to_f32(x[r * C + c]) - mean[r]) * rstd[r];
      acc_b += g;
    }
  }
  sdw[threadIdx.y][threadIdx.x] = acc_w;
  sdb[threadIdx.y][threadIdx.x] = acc_b;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    float tw = 0.0f, tb = 0.0f;
    for (int k = 0; k < kRowThreads; ++k) {
      tw += sdw[k][threadIdx.x];
      tb += sdb[k][threadIdx.x];
    }
    partial_dw[static_cast<int64_t>(blockIdx.y) * C + c] = tw;
    partial_db[static_cast<int64_t>(blockIdx.y) * C + c] = tb;
  }
}

template <typename T>
__global__ void layernorm_dwdb_finish_kernel(const float* partial_dw, const float* partial_db, T* dw, T* db,
                                             int slabs, int C) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  float tw = 0.0f, tb = 0.0f;
  for (int s = 0; s < slabs; ++s) {
    tw += partial_dw[static_cast<int64_t>(s) * C + c];
    tb += partial_db[static_cast<int64_t>(s) * C + c];
  }
  if (dw) dw[c] = from_f32<T>(to_f32(dw[c]) + tw);
  if (db) db[c] = from_f32<T>(to_f32(db[c]) + tb);
}

}  // namespace

template <typename T>
void layernorm_forward(const T* x, const T* w, const T* b, T* out, float* mean, float* rstd, int64_t N, int64_t C,
                       float eps, cudaStream_t stream) {
  ND_CHECK(N >= 0 && C > 0 && C < (1 << 30), "layernorm_forward: bad shape N=" << N << " C=" << C);
  ND_CHECK(x && w && b && out && mean && rstd, "layernorm_forward: null pointer");
  if (N == 0) return;
  int64_t blocks = ceil_div(N, kWarpsPerBlock);
  layernorm_forward_kernel<T><<<static_cast<unsigned>(blocks), kWarpsPerBlock * 32, 0, stream_or_default(stream)>>>(
      x, w, b, out, mean, rstd, N, static_cast<int>(C), eps);
  CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void layernorm_backward(const T* dout, const T* x, const T* w, const float* mean, const float* rstd, T* dx, T* dw,
                        T* db, int64_t N, int64_t C, cudaStream_t stream) {
  ND_CHECK(N >= 0 && C > 0 && C < (1 << 30), "layernorm_backward: bad shape N=" << N << " C=" << C);
  ND_CHECK(dout && x && w && mean && rstd, "layernorm_backward: null input pointer");
  if (N == 0) return;
  stream = stream_or_default(stream);
  int c = static_cast<int>(C);
  if (dx) {
    int64_t blocks = ceil_div(N, kWarpsPerBlock);
    layernorm_dx_kernel<T><<<static_cast<unsigned>(blocks), kWarpsPerBlock * 32, 0, stream>>>(dout, x, w, mean, rstd,
                                                                                             dx, N, c);
    CUDA_CHECK(cudaGetLastError());
  }
  if (!dw && !db) return;
  // About 1024 rows per slab: enough blocks to fill the GPU, few slabs to sum at the end.
  int64_t slabs = std::min<int64_t>(ceil_div(N, 1024) * 4, 256);
  slabs = std::min(slabs, N);
  int64_t rows_per_slab = ceil_div(N, slabs);
  slabs = ceil_div(N, rows_per_slab);
  float* partial = static_cast<float*>(device_alloc(2 * slabs * C * sizeof(float), current_cuda_device()));
  dim3 grid(static_cast<unsigned>(ceil_div(C, kColumnsPerBlock)), static_cast<unsigned>(slabs));
  dim3 block(kColumnsPerBlock, kRowThreads);
  layernorm_dwdb_partial_kernel<T><<<grid, block, 0, stream>>>(dout, x, mean, rstd, partial, partial + slabs * C, N, c,
                                                               rows_per_slab);
  CUDA_CHECK(cudaGetLastError());
  layernorm_dwdb_finish_kernel<T><<<static_cast<unsigned>(ceil_div(C, 256)), 256, 0, stream>>>(
      partial, partial + slabs * C, dw, db, static_cast<int>(slabs), c);
  CUDA_CHECK(cudaGetLastError());
  device_free(partial, current_cuda_device());  // reused only by later work on this stream
}

#define ND_INSTANTIATE_LAYERNORM(T)                                                                              \
  template void layernorm_forward<T>(const T*, const T*, const T*, T*, float*, float*, int64_t, int64_t, float,  \
                                     cudaStream_t);                                                              \
  template void layernorm_backward<T>(const T*, const T*, const T*, const float*, const float*, T*, T*, T*,      \
                                      int64_t, int64_t, cudaStream_t)
ND_CUDA_INSTANTIATE(ND_INSTANTIATE_LAYERNORM);

}  // namespace nd::cuda

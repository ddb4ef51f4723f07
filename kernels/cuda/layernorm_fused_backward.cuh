// The one-pass layer norm backward: each block reads its rows of dout and x once, writes or adds dx,
// and keeps f32 sums of dw and db for its rows in registers; a second kernel adds the blocks'
// partial rows in a fixed order, so dw and db are the same bit for bit run after run.
#pragma once
#include <algorithm>

#include "kernels/cuda/column_sum.cuh"
#include "kernels/cuda/common.cuh"
#include "tensor/storage.h"

namespace nd::cuda {

// The arguments of one layernorm_backward call, handed to the launcher that serves it.
template <typename T>
struct LayernormBackwardArgs {
  const T* dout;
  const T* x;
  const T* w;
  const float* mean;
  const float* rstd;
  GradDest<T> dx, dw, db;
  int64_t N;
  int C;
  cudaStream_t stream;
};

// The fused backward: a block of kFusedWarps warps owns rows_per_block rows from blockIdx.x *
// rows_per_block on. Its warps form teams of `team_warps` warps, one row per team at a time: team t takes the block's
// rows t, t + teams, ... Team lane l (of 32 * team_warps) owns packs l + j * 32 * team_warps,
// j < kPacks, in every row, so it sums dw and db of its columns in registers over the team's rows.
// At the end the teams' sums are added in team order into the block's partial row.
// dout, x, dx (N, C); w (C); mean, rstd (N); partial (2, gridDim.x, C) = dw, db per block, or null.
constexpr int kFusedWarps = 8;
constexpr int kFusedBlocksPerSm = 2;
constexpr int kMaxLaneColumns = 32;  // dw and db sums per lane: 2 x 32 f32 registers at most
constexpr int64_t kFusedMaxColumns = int64_t{kFusedWarps} * 32 * kMaxLaneColumns;

template <bool kVec, int kLaneColumns, typename T>
__global__ void __launch_bounds__(kFusedWarps * 32, kFusedBlocksPerSm)
    layernorm_backward_fused_kernel(const T* dout, const T* x, const T* w, const float* mean, const float* rstd,
                                    GradDest<T> dx, float* partial, int64_t N, int C, int team_warps,
                                    int64_t rows_per_block) {
  constexpr int kStep = kVec ? Pack16<T>::kSize : 1;
  constexpr int kPacks = kLaneColumns / kStep;
  __shared__ float row_sums[2][kFusedWarps][2];          // per round parity and warp: sum g, sum g xhat
  __shared__ float stage[2][kFusedWarps * 32 * kStep];  // one slice of every team's dw, db sums
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int teams = kFusedWarps / team_warps, team = warp / team_warps;
  int team_lane = (warp % team_warps) * 32 + lane;
  int span = 32 * team_warps * kStep;  // columns of one j over the team
  int64_t begin = blockIdx.x * rows_per_block, end = min(N, begin + rows_per_block);
  float acc_w[kPacks][kStep], acc_b[kPacks][kStep];
#pragma unroll
  for (int j = 0; j < kPacks; ++j)
#pragma unroll
    for (int k = 0; k < kStep; ++k) acc_w[j][k] = acc_b[j][k] = 0.0f;

  // Every thread runs every round (the team's row sums meet at __syncthreads); a team past the
  // block's last row only takes part in the barrier.
  int64_t rounds = (end - begin + teams - 1) / teams;
  for (int64_t round = 0; round < rounds; ++round) {
    int64_t row = begin + round * teams + team;
    bool active = row < end;
    const T* xr = x + row * C;
    const T* gr = dout + row * C;
    float mu = active ? mean[row] : 0.0f, rs = active ? rstd[row] : 0.0f;
    float sum_g = 0.0f, sum_gx = 0.0f;
    if (active) {
#pragma unroll
      for (int j = 0; j < kPacks; ++j) {
        int c = j * span + team_lane * kStep;
        if (c >= C) continue;
        float xv[kStep], gv[kStep], wv[kStep];
        load_f32(xr + c, xv);
        load_f32(gr + c, gv);
        load_f32(w + c, wv);
#pragma unroll
        for (int k = 0; k < kStep; ++k) {
          float xhat = (xv[k] - mu) * rs, g = gv[k] * wv[k];
          acc_w[j][k] += gv[k] * xhat;
          acc_b[j][k] += gv[k];
          sum_g += g;
          sum_gx += g * xhat;
        }
      }
    }
    if (dx.ptr == nullptr) continue;
    sum_g = warp_sum(sum_g);
    sum_gx = warp_sum(sum_gx);
    if (team_warps > 1) {
      // Alternate buffers by round: a warp may write round r + 1's sums while another reads round r's.
      float(*sums)[2] = row_sums[round & 1];
      if (lane == 0) {
        sums[warp][0] = sum_g;
        sums[warp][1] = sum_gx;
      }
      __syncthreads();
      sum_g = sum_gx = 0.0f;
      for (int p = team * team_warps; p < (team + 1) * team_warps; ++p) {
        sum_g += sums[p][0];
        sum_gx += sums[p][1];
      }
    }
    if (!active) continue;
    // dx (+)= rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dout * w; the row again from L1/L2.
    float mean_g = sum_g / C, mean_gx = sum_gx / C;
    T* dr = dx.ptr + row * C;
#pragma unroll
    for (int j = 0; j < kPacks; ++j) {
      int c = j * span + team_lane * kStep;
      if (c >= C) continue;
      float xv[kStep], gv[kStep], wv[kStep];
      load_f32(xr + c, xv);
      load_f32(gr + c, gv);
      load_f32(w + c, wv);
#pragma unroll
      for (int k = 0; k < kStep; ++k) {
        float xhat = (xv[k] - mu) * rs;
        gv[k] = rs * (gv[k] * wv[k] - mean_g - xhat * mean_gx);
      }
      store_grad_f32(dr + c, gv, dx.accumulate);
    }
  }
  if (partial == nullptr) return;
  // Slice j of the columns at a time: every team stages its sums, then the block adds them in team order.
#pragma unroll
  for (int j = 0; j < kPacks; ++j) {
    if (j * span >= C) break;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kStep; ++k) {
      stage[0][team * span + team_lane * kStep + k] = acc_w[j][k];
      stage[1][team * span + team_lane * kStep + k] = acc_b[j][k];
    }
    __syncthreads();
    for (int col = threadIdx.x; col < span && j * span + col < C; col += blockDim.x) {
      float total_w = 0.0f, total_b = 0.0f;
      for (int t = 0; t < teams; ++t) {
        total_w += stage[0][t * span + col];
        total_b += stage[1][t * span + col];
      }
      int64_t c = j * span + col;
      partial[static_cast<int64_t>(blockIdx.x) * C + c] = total_w;
      partial[static_cast<int64_t>(gridDim.x + blockIdx.x) * C + c] = total_b;
    }
  }
}

// dests (dw, db) (C) (+)= the sum over the blocks' partial rows (2, blocks, C), blocks in a fixed order:
// lane y of a column adds blocks y, y + kFinishLanes, ...; then the lanes are added in order.
constexpr int kFinishColumns = 32;
constexpr int kFinishLanes = 16;

template <typename T>
__global__ void layernorm_param_grads_kernel(const float* partial, ColumnDests<T, 2> dests, int blocks, int C) {
  __shared__ float sums[kFinishLanes][kFinishColumns];
  GradDest<T> d = blockIdx.y == 0 ? dests.d[0] : dests.d[1];  // constant indices: no local copy
  if (d.ptr == nullptr) return;
  int c = blockIdx.x * kFinishColumns + threadIdx.x;
  const float* p = partial + static_cast<int64_t>(blockIdx.y) * blocks * C;
  float total = 0.0f;
  if (c < C)
    for (int b = threadIdx.y; b < blocks; b += kFinishLanes) total += p[static_cast<int64_t>(b) * C + c];
  sums[threadIdx.y][threadIdx.x] = total;
  __syncthreads();
  if (threadIdx.y != 0 || c >= C) return;
  total = 0.0f;
  for (int y = 0; y < kFinishLanes; ++y) total += sums[y][threadIdx.x];
  d.ptr[c] = from_f32<T>(d.accumulate ? to_f32(d.ptr[c]) + total : total);
}

template <bool kVec, int kLaneColumns, typename T>
void launch_fused(const LayernormBackwardArgs<T>& a, float* partial, int team_warps, int64_t rows_per_block,
                  int blocks) {
  layernorm_backward_fused_kernel<kVec, kLaneColumns, T><<<blocks, kFusedWarps * 32, 0, a.stream>>>(
      a.dout, a.x, a.w, a.mean, a.rstd, a.dx, partial, a.N, a.C, team_warps, rows_per_block);
}

// One read of dout and x: the fused kernel writes dx and a partial row of dw, db per block, then
// layernorm_param_grads_kernel adds the partial rows into dw and db.
template <bool kVec, typename T>
void layernorm_backward_fused(const LayernormBackwardArgs<T>& a) {
  constexpr int kStep = kVec ? Pack16<T>::kSize : 1;
  // The narrowest team whose lanes hold the row in at most kMaxLaneColumns columns each; the
  // columns per lane rounded up to a multiple of 8 (a whole number of packs for every kStep).
  int team_warps = 1;
  while (int64_t{32} * team_warps * kMaxLaneColumns < a.C) team_warps *= 2;
  int64_t packs_per_lane = ceil_div(ceil_div(a.C, kStep), 32 * team_warps);
  int lane_columns = static_cast<int>(ceil_div(packs_per_lane * kStep, 8) * 8);
  // About kFusedBlocksPerSm blocks per SM, each a multiple of `teams` rows: few partial rows to add.
  int teams = kFusedWarps / team_warps;
  int device = current_cuda_device();
  int64_t max_blocks = int64_t{kFusedBlocksPerSm} * multiprocessor_count(device);
  int64_t rows_per_block = ceil_div(ceil_div(a.N, std::min(max_blocks, ceil_div(a.N, teams))), teams) * teams;
  int blocks = static_cast<int>(ceil_div(a.N, rows_per_block));
  bool params = a.dw.ptr || a.db.ptr;
  float* partial =
      params ? static_cast<float*>(device_alloc(2 * int64_t{blocks} * a.C * sizeof(float), device)) : nullptr;
  switch (lane_columns) {
    case 8: launch_fused<kVec, 8>(a, partial, team_warps, rows_per_block, blocks); break;
    case 16: launch_fused<kVec, 16>(a, partial, team_warps, rows_per_block, blocks); break;
    case 24: launch_fused<kVec, 24>(a, partial, team_warps, rows_per_block, blocks); break;
    default: launch_fused<kVec, 32>(a, partial, team_warps, rows_per_block, blocks); break;
  }
  CUDA_CHECK(cudaGetLastError());
  if (!params) return;
  dim3 grid(static_cast<unsigned>(ceil_div(a.C, kFinishColumns)), 2);
  layernorm_param_grads_kernel<T><<<grid, dim3(kFinishColumns, kFinishLanes), 0, a.stream>>>(
      partial, ColumnDests<T, 2>{{a.dw, a.db}}, blocks, a.C);
  CUDA_CHECK(cudaGetLastError());
  device_free(partial, device);  // reused only by later work on this stream
}

}  // namespace nd::cuda

// Tensor-core flash attention backward for bf16 (see attention_mma.cuh): a dq kernel over key
// tiles per query tile (S = Q Kᵀ, P = exp(S - lse), dP = dO Vᵀ, dS = P (dP - delta), dq += dS K) and
// a dk/dv kernel over query tiles per key tile (the transposed products), each owning its outputs:
// deterministic, no atomics. Tiles of 64 rows, 4 warps of 16 rows; cp.async double buffering.
// With kDropout both kernels redraw the keep mask Z: dP becomes (dO Vᵀ) ∘ Z / (1 - p) and dv takes
// P ∘ Z / (1 - p); P itself and delta = rowsum(dO ∘ O) keep their meaning.
#include "kernels/cuda/attention_mma.cuh"
#include "kernels/cuda/attention_mma_tiles.cuh"

namespace nd::cuda::detail {

namespace {

constexpr int kThreads = 128;

// Writes (accumulate: adds) a 16 x HS f32 accumulator (C fragments, rows row[0..1]) times `scale`
// into bf16 rows of dst.
template <int HS>
__device__ __forceinline__ void store_rows(nd::bf16* dst, int64_t stride, const int64_t (&row)[2], int64_t T,
                                           const float (&acc)[HS / 8][4], float scale, int c, bool accumulate) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    if (row[r] >= T) continue;
    nd::bf16* p = dst + row[r] * stride;
#pragma unroll
    for (int n = 0; n < HS / 8; ++n) {
      __nv_bfloat162* q = reinterpret_cast<__nv_bfloat162*>(p + n * 8 + 2 * c);
      float2 old = accumulate ? __bfloat1622float2(*q) : make_float2(0.0f, 0.0f);
      *q = __floats2bfloat162_rn(old.x + acc[n][2 * r] * scale, old.y + acc[n][2 * r + 1] * scale);
    }
  }
}

// dq for 64 query rows: over key tiles, S = Q Kᵀ, P = exp(S - lse), dP = dO Vᵀ (∘ Z / (1 - p)),
// dS = P (dP - delta), dq += dS K.
template <int HS, bool kDropout>
__global__ void __launch_bounds__(kThreads)
    dq_kernel(const nd::bf16* dout, const nd::bf16* qkv, const float* lse, const float* delta, nd::bf16* dqkv, Dims d,
              float scale_log2, float scale, AttentionDropout drop, bool accumulate) {
  if (kDropout) drop = drop.resolved();  // the step's counter, read on the device
  extern __shared__ __align__(16) uint16_t smem[];
  constexpr int kTileElems = kTile * padded<HS>();
  uint16_t* sQ = smem;
  uint16_t* sG = sQ + kTileElems;
  uint16_t* sKV = sG + kTileElems;  // two stages of (K, V)
  const int q_tile = gridDim.y - 1 - blockIdx.y;
  const int64_t bh = blockIdx.x, b = bh / d.NH, h = bh % d.NH;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, c = lane % 4;
  const int64_t q0 = static_cast<int64_t>(q_tile) * kTile;
  const nd::bf16* base = qkv + b * d.T * 3 * d.C;
  load_tile<HS>(sQ, base, 3 * d.C, h * HS, q0, d.T);
  load_tile<HS>(sG, dout + b * d.T * d.C, d.C, h * HS, q0, d.T);
  load_kv_stage<HS>(sKV, 0, base, d, h);
  mma::cp_async_commit();
  uint32_t qf[HS / 16][4], gf[HS / 16][4];
  const int64_t row[2] = {q0 + warp * 16 + g, q0 + warp * 16 + g + 8};
  float row_lse[2], row_delta[2];
  uint64_t row_counter[2];  // dropout counter of (row, key 0)
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    bool live = row[r] < d.T;
    row_lse[r] = live ? lse[bh * d.T + row[r]] * kLog2e : 0.0f;
    row_delta[r] = live ? delta[bh * d.T + row[r]] : 0.0f;
    row_counter[r] = kDropout ? drop.row_counter(bh, d.T, row[r]) : 0;
  }
  const float keep_scale = kDropout ? drop.keep_scale() : 1.0f;
  float dq[HS / 8][4];
#pragma unroll
  for (int n = 0; n < HS / 8; ++n) dq[n][0] = dq[n][1] = dq[n][2] = dq[n][3] = 0.0f;

  for (int k_tile = 0; k_tile <= q_tile; ++k_tile) {
    const int64_t k0 = static_cast<int64_t>(k_tile) * kTile;
    const uint16_t* sK = next_kv_stage<HS>(sKV, k_tile, k_tile < q_tile, base, d, h);
    const uint16_t* sV = sK + kTileElems;
    if (k_tile == 0) {
      load_a_fragments<HS>(qf, sQ, warp, lane);
      load_a_fragments<HS>(gf, sG, warp, lane);
    }
    uint32_t keep = 0;  // dropout keep bits, drawn before the products so that both can overlap
    if constexpr (kDropout) {
      const uint64_t base[2] = {row_counter[0] + k0, row_counter[1] + k0};
      keep = draw_keep_bits(drop, base, 1, c);
    }
    float s[8][4], dp[8][4];
    a_times_tile_t<HS>(s, qf, sK, lane);
    a_times_tile_t<HS>(dp, gf, sV, lane);
    const bool diagonal = k_tile == q_tile;
#pragma unroll
    for (int n = 0; n < 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        int r = e / 2;
        bool masked = diagonal && k0 + n * 8 + 2 * c + (e & 1) > row[r];
        float p = masked ? 0.0f : exp2f(s[n][e] * scale_log2 - row_lse[r]);
        float dpv = dp[n][e];
        if (kDropout) dpv = keep_bit(keep, n, e) ? dpv * keep_scale : 0.0f;
        s[n][e] = p * (dpv - row_delta[r]);
      }
    c_times_tile<HS>(dq, s, sK, lane);
    __syncthreads();
  }
  store_rows<HS>(dqkv + b * d.T * 3 * d.C + h * HS, 3 * d.C, row, d.T, dq, scale, c, accumulate);
}

// dk, dv for 64 key rows: over query tiles i >= key tile, Sᵀ = K Qᵀ, Pᵀ = exp(Sᵀ - lse),
// dv += (Pᵀ ∘ Zᵀ) dO / (1 - p), dPᵀ = V dOᵀ (∘ Zᵀ / (1 - p)), dSᵀ = Pᵀ (dPᵀ - delta),
// dk += dSᵀ Q.
template <int HS, bool kDropout>
__global__ void __launch_bounds__(kThreads)
    dkv_kernel(const nd::bf16* dout, const nd::bf16* qkv, const float* lse, const float* delta, nd::bf16* dqkv, Dims d,
               float scale_log2, float scale, AttentionDropout drop, bool accumulate) {
  if (kDropout) drop = drop.resolved();  // the step's counter, read on the device
  extern __shared__ __align__(16) uint16_t smem[];
  constexpr int kTileElems = kTile * padded<HS>();
  uint16_t* sK = smem;
  uint16_t* sV = sK + kTileElems;
  uint16_t* sQG = sV + kTileElems;                                  // two stages of (Q, dO)
  float* s_stats = reinterpret_cast<float*>(sQG + 4 * kTileElems);  // two stages of (lse, delta)
  const int k_tile = blockIdx.y;  // the first key tiles see the most queries: launched first
  const int64_t bh = blockIdx.x, b = bh / d.NH, h = bh % d.NH;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, c = lane % 4;
  const int64_t k0 = static_cast<int64_t>(k_tile) * kTile;
  const nd::bf16* base = qkv + b * d.T * 3 * d.C;
  const nd::bf16* gbase = dout + b * d.T * d.C;
  const int n_tiles = static_cast<int>((d.T + kTile - 1) / kTile);
  // Stage `stage` gets query tile q_tile: Q, dO by cp.async, lse and delta by plain stores.
  auto load_stage = [&](int q_tile, int stage) {
    const int64_t q0 = static_cast<int64_t>(q_tile) * kTile;
    uint16_t* dst = sQG + stage * 2 * kTileElems;
    load_tile<HS>(dst, base, 3 * d.C, h * HS, q0, d.T);
    load_tile<HS>(dst + kTileElems, gbase, d.C, h * HS, q0, d.T);
    if (threadIdx.x < kTile) {
      int64_t t = q0 + threadIdx.x;
      float* stats = s_stats + stage * 2 * kTile;
      stats[threadIdx.x] = t < d.T ? lse[bh * d.T + t] * kLog2e : 0.0f;
      stats[kTile + threadIdx.x] = t < d.T ? delta[bh * d.T + t] : 0.0f;
    }
  };
  load_tile<HS>(sK, base, 3 * d.C, d.C + h * HS, k0, d.T);
  load_tile<HS>(sV, base, 3 * d.C, 2 * d.C + h * HS, k0, d.T);
  load_stage(k_tile, 0);
  mma::cp_async_commit();
  uint32_t kf[HS / 16][4], vf[HS / 16][4];
  const int64_t key[2] = {k0 + warp * 16 + g, k0 + warp * 16 + g + 8};
  float dk[HS / 8][4], dv[HS / 8][4];
#pragma unroll
  for (int n = 0; n < HS / 8; ++n) {
    dk[n][0] = dk[n][1] = dk[n][2] = dk[n][3] = 0.0f;
    dv[n][0] = dv[n][1] = dv[n][2] = dv[n][3] = 0.0f;
  }
  const float keep_scale = kDropout ? drop.keep_scale() : 1.0f;  // dv's part joins at the end
  for (int q_tile = k_tile; q_tile < n_tiles; ++q_tile) {
    const int64_t q0 = static_cast<int64_t>(q_tile) * kTile;
    const int stage = (q_tile - k_tile) & 1;
    const uint16_t* sQ = sQG + stage * 2 * kTileElems;
    const uint16_t* sG = sQ + kTileElems;
    const float* s_lse = s_stats + stage * 2 * kTile;
    const float* s_delta = s_lse + kTile;
    if (q_tile + 1 < n_tiles) {
      load_stage(q_tile + 1, stage ^ 1);
      mma::cp_async_commit();
      mma::cp_async_wait<1>();
    } else {
      mma::cp_async_wait<0>();
    }
    __syncthreads();
    if (q_tile == k_tile) {
      load_a_fragments<HS>(kf, sK, warp, lane);
      load_a_fragments<HS>(vf, sV, warp, lane);
    }
    uint32_t keep = 0;  // element (query q0 + column, key key[r]): counter row_counter(q0) + column T + key
    if constexpr (kDropout) {
      const uint64_t q0_counter = drop.row_counter(bh, d.T, q0);
      const uint64_t base[2] = {q0_counter + key[0], q0_counter + key[1]};
      keep = draw_keep_bits(drop, base, static_cast<uint64_t>(d.T), c);
    }
    float p[8][4], dp[8][4];
    a_times_tile_t<HS>(p, kf, sQ, lane);
    a_times_tile_t<HS>(dp, vf, sG, lane);
    // Masks: queries before a key (diagonal tile) and queries past T (last tile).
    const bool edge = q_tile == k_tile || q0 + kTile > d.T;
#pragma unroll
    for (int n = 0; n < 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        int col = n * 8 + 2 * c + (e & 1);
        int r = e / 2;
        bool masked = edge && (q0 + col < key[r] || q0 + col >= d.T);
        float pv = masked ? 0.0f : exp2f(p[n][e] * scale_log2 - s_lse[col]);
        float dpv = dp[n][e];
        if (kDropout) {
          bool kept = keep_bit(keep, n, e);
          dpv = kept ? dpv * keep_scale : 0.0f;
          p[n][e] = kept ? pv : 0.0f;
        } else {
          p[n][e] = pv;
        }
        dp[n][e] = pv * (dpv - s_delta[col]);
      }
    c_times_tile<HS>(dv, p, sG, lane);
    c_times_tile<HS>(dk, dp, sQ, lane);
    __syncthreads();
  }
  nd::bf16* dbase = dqkv + b * d.T * 3 * d.C;
  store_rows<HS>(dbase + d.C + h * HS, 3 * d.C, key, d.T, dk, scale, c, accumulate);
  store_rows<HS>(dbase + 2 * d.C + h * HS, 3 * d.C, key, d.T, dv, keep_scale, c, accumulate);
}

template <int HS, bool kDropout>
void backward(const nd::bf16* dout, const nd::bf16* qkv, const float* lse, const float* delta, nd::bf16* dqkv,
              bool accumulate, int64_t B, int64_t T, int64_t C, int64_t NH, const AttentionDropout& dropout,
              cudaStream_t stream) {
  Dims d{T, C, NH};
  float scale = 1.0f / sqrtf(static_cast<float>(HS));
  dim3 grid(static_cast<unsigned>(B * NH), static_cast<unsigned>(ceil_div(T, kTile)));
  size_t smem_dq = 6 * tile_bytes<HS>();
  allow_shared_memory(dq_kernel<HS, kDropout>, smem_dq);
  dq_kernel<HS, kDropout>
      <<<grid, kThreads, smem_dq, stream>>>(dout, qkv, lse, delta, dqkv, d, scale * kLog2e, scale, dropout, accumulate);
  CUDA_CHECK(cudaGetLastError());
  size_t smem_dkv = 6 * tile_bytes<HS>() + 4 * kTile * sizeof(float);
  allow_shared_memory(dkv_kernel<HS, kDropout>, smem_dkv);
  dkv_kernel<HS, kDropout>
      <<<grid, kThreads, smem_dkv, stream>>>(dout, qkv, lse, delta, dqkv, d, scale * kLog2e, scale, dropout,
                                             accumulate);
  CUDA_CHECK(cudaGetLastError());
}

// The no-dropout instances draw nothing.
template <int HS>
void backward_head_size(const nd::bf16* dout, const nd::bf16* qkv, const float* lse, const float* delta,
                        nd::bf16* dqkv, bool accumulate, int64_t B, int64_t T, int64_t C, int64_t NH,
                        const AttentionDropout& dropout, cudaStream_t stream) {
  if (dropout.active()) {
    backward<HS, true>(dout, qkv, lse, delta, dqkv, accumulate, B, T, C, NH, dropout, stream);
  } else {
    backward<HS, false>(dout, qkv, lse, delta, dqkv, accumulate, B, T, C, NH, dropout, stream);
  }
}

}  // namespace

void attention_backward_mma(const nd::bf16* dout, const nd::bf16* qkv, const float* lse, const float* delta,
                            GradDest<nd::bf16> dqkv, int64_t B, int64_t T_len, int64_t C, int64_t NH,
                            const AttentionDropout& dropout, cudaStream_t stream) {
  int64_t hs = C / NH;
  ND_CHECK(attention_mma_supports(hs), "attention_backward_mma: head size " << hs << " is not 64 or 128");
  if (hs == 64) {
    backward_head_size<64>(dout, qkv, lse, delta, dqkv.ptr, dqkv.accumulate, B, T_len, C, NH, dropout, stream);
  } else {
    backward_head_size<128>(dout, qkv, lse, delta, dqkv.ptr, dqkv.accumulate, B, T_len, C, NH, dropout, stream);
  }
}

}  // namespace nd::cuda::detail

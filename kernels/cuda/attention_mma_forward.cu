// Tensor-core flash attention forward for bf16 (see attention_mma.cuh). A block of kWarps warps
// takes 16 * kRB * kWarps query rows (each warp kRB blocks of 16 rows) and walks 64-key tiles of K
// and V, double-buffered by cp.async; the online softmax runs in the log2 domain on the f32
// accumulators. Variants (kRB, kWarps) trade registers for reuse of each K/V fragment load.
// With kDropout the softmax statistics (m, l, lse) still use every probability; only the P·V
// product sees the dropped ones, and 1 / (1 - p) joins the final 1 / l.
#include "kernels/cuda/attention_mma.cuh"
#include "kernels/cuda/attention_mma_tiles.cuh"

namespace nd::cuda::detail {

namespace {

template <int HS, int kRB, int kWarps>
constexpr int min_blocks_per_sm() {
  return HS == 64 && kRB == 1 ? 8 / kWarps * 2 : (HS == 64 ? 2 : 1);
}

template <int HS, int kRB, int kWarps, bool kDropout>
__global__ void __launch_bounds__(32 * kWarps, (min_blocks_per_sm<HS, kRB, kWarps>()))
    forward_kernel(const nd::bf16* qkv, nd::bf16* out, float* lse, Dims d, float scale_log2, AttentionDropout drop) {
  if (kDropout) drop = drop.resolved();  // the step's counter, read on the device
  constexpr int kRowsPerWarp = 16 * kRB;
  constexpr int kBlockRows = kRowsPerWarp * kWarps;
  constexpr int kTileElems = kTile * padded<HS>();
  extern __shared__ __align__(16) uint16_t smem[];
  uint16_t* sQ = smem;
  uint16_t* sKV = sQ + kBlockRows * padded<HS>();  // two stages of (K, V)
  const int q_tile = gridDim.y - 1 - blockIdx.y;   // longest rows first, across all heads
  const int64_t bh = blockIdx.x, b = bh / d.NH, h = bh % d.NH;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, c = lane % 4;
  const int q0 = q_tile * kBlockRows;  // positions fit in int: T < 2^30 (attention.cu)
  const int warp_row0 = q0 + warp * kRowsPerWarp;
  const nd::bf16* base = qkv + b * d.T * 3 * d.C;
  // Key tiles up to the block's last row (and T).
  const int n_k_tiles = static_cast<int>((min(d.T, static_cast<int64_t>(q0 + kBlockRows)) + kTile - 1) / kTile);
  load_tile<HS, kBlockRows>(sQ, base, 3 * d.C, h * HS, q0, d.T);
  load_kv_stage<HS>(sKV, 0, base, d, h);
  mma::cp_async_commit();

  uint32_t qf[kRB][HS / 16][4];
  float o[kRB][HS / 8][4];
  float m[kRB][2], l[kRB][2];
  int row[kRB][2];
  uint64_t row_counter[kRB][2];  // dropout counter of (row, key 0)
#pragma unroll
  for (int rb = 0; rb < kRB; ++rb) {
#pragma unroll
    for (int n = 0; n < HS / 8; ++n) o[rb][n][0] = o[rb][n][1] = o[rb][n][2] = o[rb][n][3] = 0.0f;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      m[rb][r] = -INFINITY;
      l[rb][r] = 0.0f;
      row[rb][r] = warp_row0 + rb * 16 + g + 8 * r;
      row_counter[rb][r] = kDropout ? drop.row_counter(bh, d.T, row[rb][r]) : 0;
    }
  }

  for (int k_tile = 0; k_tile < n_k_tiles; ++k_tile) {
    const int k0 = k_tile * kTile;
    const uint16_t* sK = next_kv_stage<HS>(sKV, k_tile, k_tile + 1 < n_k_tiles, base, d, h);
    const uint16_t* sV = sK + kTileElems;
    if (k_tile == 0) load_a_fragments<HS, kRB>(qf, sQ, warp * kRowsPerWarp, lane);
    uint32_t keep[kRB] = {};  // dropout keep bits, drawn before the products so that both can overlap
    if constexpr (kDropout) {
#pragma unroll
      for (int rb = 0; rb < kRB; ++rb) {
        const uint64_t base[2] = {row_counter[rb][0] + k0, row_counter[rb][1] + k0};
        keep[rb] = draw_keep_bits(drop, base, 1, c);
      }
    }
    float s[kRB][8][4];
    a_times_tile_t<HS, kRB>(s, qf, sK, lane);
    // Only tiles holding keys after the warp's first row need the causal mask (keys >= T are
    // after every row < T; rows >= T are never written).
    const bool mask = k0 + kTile - 1 > warp_row0;
#pragma unroll
    for (int rb = 0; rb < kRB; ++rb) {
      float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
      for (int n = 0; n < 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          int r = e / 2;
          float v = s[rb][n][e] * scale_log2;
          if (mask && k0 + n * 8 + 2 * c + (e & 1) > row[rb][r]) v = -INFINITY;
          s[rb][n][e] = v;
          tile_max[r] = fmaxf(tile_max[r], v);
        }
      float correction[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 1));
        tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 2));
        float m_new = fmaxf(m[rb][r], tile_max[r]);
        float m_use = m_new == -INFINITY ? 0.0f : m_new;  // a row with no key yet keeps zeros
        correction[r] = exp2f(m[rb][r] - m_use);
        m[rb][r] = m_new;
        tile_max[r] = m_use;
      }
      float sum[2] = {0.0f, 0.0f};
#pragma unroll
      for (int n = 0; n < 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          float p = exp2f(s[rb][n][e] - tile_max[e / 2]);
          sum[e / 2] += p;
          if (kDropout && !keep_bit(keep[rb], n, e)) p = 0.0f;
          s[rb][n][e] = p;
        }
#pragma unroll
      for (int r = 0; r < 2; ++r) l[rb][r] = l[rb][r] * correction[r] + sum[r];
#pragma unroll
      for (int n = 0; n < HS / 8; ++n) {
        o[rb][n][0] *= correction[0];
        o[rb][n][1] *= correction[0];
        o[rb][n][2] *= correction[1];
        o[rb][n][3] *= correction[1];
      }
    }
    c_times_tile<HS, kRB>(o, s, sV, lane);
    __syncthreads();  // the stage is free for the prefetch after next
  }

#pragma unroll
  for (int rb = 0; rb < kRB; ++rb)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float total = l[rb][r];
      total += __shfl_xor_sync(0xffffffffu, total, 1);
      total += __shfl_xor_sync(0xffffffffu, total, 2);
      if (row[rb][r] >= d.T) continue;
      float inv = (kDropout ? drop.keep_scale() : 1.0f) / total;
      nd::bf16* orow = out + (b * d.T + row[rb][r]) * d.C + h * HS;
#pragma unroll
      for (int n = 0; n < HS / 8; ++n)
        *reinterpret_cast<uint32_t*>(orow + n * 8 + 2 * c) =
            mma::pack_bf16(o[rb][n][2 * r] * inv, o[rb][n][2 * r + 1] * inv);
      if (c == 0) lse[bh * d.T + row[rb][r]] = m[rb][r] * kLn2 + logf(total);
    }
}

template <int HS, int kRB, int kWarps, bool kDropout>
void forward(const nd::bf16* qkv, nd::bf16* out, float* lse, int64_t B, int64_t T, int64_t C, int64_t NH,
             const AttentionDropout& dropout, cudaStream_t stream) {
  constexpr int kBlockRows = 16 * kRB * kWarps;
  Dims d{T, C, NH};
  float scale = 1.0f / sqrtf(static_cast<float>(HS));
  dim3 grid(static_cast<unsigned>(B * NH), static_cast<unsigned>(ceil_div(T, kBlockRows)));
  size_t smem = tile_bytes<HS>(kBlockRows) + 4 * tile_bytes<HS>();
  allow_shared_memory(forward_kernel<HS, kRB, kWarps, kDropout>, smem);
  forward_kernel<HS, kRB, kWarps, kDropout>
      <<<grid, 32 * kWarps, smem, stream>>>(qkv, out, lse, d, scale * kLog2e, dropout);
  CUDA_CHECK(cudaGetLastError());
}

// (kRB, kWarps) of each variant; 0 is the default.
template <int HS, bool kDropout>
void forward_variant(const nd::bf16* qkv, nd::bf16* out, float* lse, int64_t B, int64_t T, int64_t C, int64_t NH,
                     const AttentionDropout& dropout, cudaStream_t stream, int variant) {
  switch (variant) {
    case 1:  // 32 rows per warp exceed the registers at head size 128: the default runs instead
      if constexpr (HS == 64) {
        forward<HS, 2, 4, kDropout>(qkv, out, lse, B, T, C, NH, dropout, stream);
      } else {
        forward<HS, 1, 4, kDropout>(qkv, out, lse, B, T, C, NH, dropout, stream);
      }
      break;
    case 2:
      forward<HS, 1, 8, kDropout>(qkv, out, lse, B, T, C, NH, dropout, stream);
      break;
    default:
      forward<HS, 1, 4, kDropout>(qkv, out, lse, B, T, C, NH, dropout, stream);
      break;
  }
}

// The no-dropout instances draw nothing.
template <int HS>
void forward_head_size(const nd::bf16* qkv, nd::bf16* out, float* lse, int64_t B, int64_t T, int64_t C, int64_t NH,
                       const AttentionDropout& dropout, cudaStream_t stream, int variant) {
  if (dropout.active()) {
    forward_variant<HS, true>(qkv, out, lse, B, T, C, NH, dropout, stream, variant);
  } else {
    forward_variant<HS, false>(qkv, out, lse, B, T, C, NH, dropout, stream, variant);
  }
}

}  // namespace

bool attention_mma_supports(int64_t head_size) { return head_size == 64 || head_size == 128; }

int attention_forward_variant_count() { return 3; }

void attention_forward_mma(const nd::bf16* qkv, nd::bf16* out, float* lse, int64_t B, int64_t T_len, int64_t C,
                           int64_t NH, const AttentionDropout& dropout, cudaStream_t stream, int variant) {
  int64_t hs = C / NH;
  ND_CHECK(attention_mma_supports(hs), "attention_forward_mma: head size " << hs << " is not 64 or 128");
  ND_CHECK(variant >= 0 && variant < attention_forward_variant_count(),
           "attention forward variant " << variant << " does not exist (0.." << attention_forward_variant_count() - 1
                                        << ")");
  if (hs == 64) {
    forward_head_size<64>(qkv, out, lse, B, T_len, C, NH, dropout, stream, variant);
  } else {
    forward_head_size<128>(qkv, out, lse, B, T_len, C, NH, dropout, stream, variant);
  }
}

}  // namespace nd::cuda::detail

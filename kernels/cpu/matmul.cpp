// Blocked GEMM after Goto/BLIS: C is cut into MC x NC tiles shared out to threads; for each KC
// slice of the inner dimension a thread packs its block of op(A) and panel of op(B) (L2), and an
// MR x NR micro-kernel sweeps NR-wide slivers of B (L1) with its tile of C in registers.
#include "kernels/cpu/matmul.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <new>

namespace nd::cpu {

namespace {

#if defined(__AVX512F__)
constexpr int kVectorBytes = 64;
#elif defined(__AVX__)
constexpr int kVectorBytes = 32;
#else
constexpr int kVectorBytes = 16;
#endif

// The micro-tile is MR rows by kTileVectors vector registers: its accumulators, one row of B and a
// broadcast of A fit the register file. AVX-512 (32 registers): 8 x 3 -> 24 + 3 + 1, measured
// ~20% faster than 12 x 2 on Zen 5. AVX2 (16 registers): 6 x 2 -> 12 + 2 + 1.
constexpr int kTileRows = kVectorBytes == 64 ? 8 : 6;
constexpr int kTileVectors = kVectorBytes == 64 ? 3 : 2;

template <typename T>
struct Blocking {
  static constexpr int NR = kTileVectors * kVectorBytes / static_cast<int>(sizeof(T));
  static constexpr int MR = kTileRows;
  // A thread's A block (MC x KC) and B panel (KC x NC) share its L2 (1 MB on Zen 5); one KC x NR
  // sliver of B stays in L1 while the micro-kernel sweeps the A block.
  static constexpr int64_t KC = 256;
  static constexpr int64_t MC = 1536 / sizeof(T) / MR * MR;  // 384 rows of f32: 384 KB
  static constexpr int64_t NC = 8 * NR;                       // 384 columns of f32: 384 KB
};

// Grow-only, 64-byte-aligned scratch: after the first call of a given size, no allocation.
template <typename T>
class ScratchBuffer {
 public:
  ~ScratchBuffer() { std::free(data_); }
  T* get(int64_t count) {
    if (count > capacity_) {
      std::free(data_);
      data_ = nullptr;
      capacity_ = 0;
      size_t bytes = (static_cast<size_t>(count) * sizeof(T) + 63) / 64 * 64;
      data_ = static_cast<T*>(std::aligned_alloc(64, bytes));
      if (!data_) throw std::bad_alloc();
      capacity_ = count;
    }
    return data_;
  }

 private:
  T* data_ = nullptr;
  int64_t capacity_ = 0;
};

// Per calling thread, so that matmuls issued concurrently (e.g. from an outer parallel loop)
// never share packing buffers.
template <typename T>
T* thread_scratch(int64_t count) {
  thread_local ScratchBuffer<T> buffer;
  return buffer.get(count);
}

// op(A) rows [i0, i0+mc), columns [p0, p0+kc) -> slivers of MR rows, each laid out k-major:
// packed[s][p][r] = op(A)(i0 + s*MR + r, p0 + p); rows past mc are zero.
template <typename T>
void pack_a(const T* A, int64_t M, int64_t K, bool trans_a, int64_t i0, int64_t mc, int64_t p0, int64_t kc, T* packed) {
  constexpr int MR = Blocking<T>::MR;
  if (trans_a) {  // A is (K, M): walk each row of A once, scattering it over the slivers
    for (int64_t p = 0; p < kc; ++p) {
      const T* src = A + (p0 + p) * M + i0;
      for (int64_t s = 0; s < mc; s += MR) {
        int rows = static_cast<int>(std::min<int64_t>(MR, mc - s));
        T* dst = packed + s * kc + p * MR;
        for (int r = 0; r < MR; ++r) dst[r] = r < rows ? src[s + r] : T(0);
      }
    }
    return;
  }
  for (int64_t s = 0; s < mc; s += MR) {
    int rows = static_cast<int>(std::min<int64_t>(MR, mc - s));
    T* dst = packed + s * kc;
    for (int r = 0; r < MR; ++r) {  // A is (M, K): read MR rows in step
      if (r < rows) {
        const T* src = A + (i0 + s + r) * K + p0;
        for (int64_t p = 0; p < kc; ++p) dst[p * MR + r] = src[p];
      } else {
        for (int64_t p = 0; p < kc; ++p) dst[p * MR + r] = T(0);
      }
    }
  }
}

// Sliver `s` of op(B) rows [p0, p0+kc), columns [j0 + s*NR, ...): packed[p][c] = op(B)(p0+p, j0+s*NR+c);
// columns past nc are zero.
template <typename T>
void pack_b_sliver(const T* B, int64_t N, int64_t K, bool trans_b, int64_t p0, int64_t kc, int64_t j0, int64_t nc,
                   int64_t s, T* packed) {
  constexpr int NR = Blocking<T>::NR;
  int64_t jbase = s * NR;
  int cols = static_cast<int>(std::min<int64_t>(NR, nc - jbase));
  T* dst = packed + jbase * kc;
  if (trans_b) {  // B is (N, K): each column of op(B) is a contiguous row of B
    for (int c = 0; c < NR; ++c) {
      if (c < cols) {
        const T* src = B + (j0 + jbase + c) * K + p0;
        for (int64_t p = 0; p < kc; ++p) dst[p * NR + c] = src[p];
      } else {
        for (int64_t p = 0; p < kc; ++p) dst[p * NR + c] = T(0);
      }
    }
  } else {  // B is (K, N): NR contiguous values per k
    for (int64_t p = 0; p < kc; ++p) {
      const T* src = B + (p0 + p) * N + j0 + jbase;
      for (int c = 0; c < NR; ++c) dst[p * NR + c] = c < cols ? src[c] : T(0);
    }
  }
}

// C tile (rows x cols of an MR x NR tile, leading dimension ldc) = beta*C + a_sliver · b_sliver.
// The accumulator array has compile-time extents, so -O3 keeps it in vector registers.
template <typename T>
inline void micro_kernel(int64_t kc, const T* __restrict a, const T* __restrict b, T* __restrict c, int64_t ldc, T beta,
                         int rows, int cols) {
  constexpr int MR = Blocking<T>::MR, NR = Blocking<T>::NR;
  T acc[MR][NR] = {};
  for (int64_t p = 0; p < kc; ++p) {
    const T* bp = b + p * NR;
    const T* ap = a + p * MR;
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      T ar = ap[r];
#pragma GCC unroll 64
      for (int j = 0; j < NR; ++j) acc[r][j] += ar * bp[j];
    }
  }
  if (rows == MR && cols == NR) {
    for (int r = 0; r < MR; ++r) {
      T* cr = c + r * ldc;
      if (beta == T(0)) {
        for (int j = 0; j < NR; ++j) cr[j] = acc[r][j];
      } else {
        for (int j = 0; j < NR; ++j) cr[j] = beta * cr[j] + acc[r][j];
      }
    }
    return;
  }
  for (int r = 0; r < rows; ++r) {
    T* cr = c + r * ldc;
    for (int j = 0; j < cols; ++j) cr[j] = (beta == T(0) ? T(0) : beta * cr[j]) + acc[r][j];
  }
}

}  // namespace

template <typename T>
void matmul(const T* A, const T* B, T* C, int64_t M, int64_t N, int64_t K, bool trans_a, bool trans_b, T beta) {
  using Blk = Blocking<T>;
  constexpr int MR = Blk::MR, NR = Blk::NR;
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {  // empty sum: C = beta*C
    for (int64_t i = 0; i < M * N; ++i) C[i] = beta == T(0) ? T(0) : beta * C[i];
    return;
  }

  // Small problems stay on the calling thread: a parallel region costs more than they do.
  bool parallel = static_cast<double>(M) * N * K >= 64.0 * 64 * 64 && !omp_in_parallel();
  int threads = parallel ? omp_get_max_threads() : 1;
  // C is cut into mc x nc tiles, one task each. When there are few tiles (the weight-gradient
  // GEMMs: M, N of a few hundred, K huge), make their count a multiple of the thread count.
  int64_t nc_tile = std::min<int64_t>(Blk::NC, (N + NR - 1) / NR * NR);
  int64_t col_tiles = (N + nc_tile - 1) / nc_tile;
  int64_t row_tiles = (M + Blk::MC - 1) / Blk::MC;
  if (row_tiles * col_tiles < 4 * threads)
    while ((row_tiles * col_tiles) % threads != 0 && row_tiles < (M + MR - 1) / MR) ++row_tiles;
  int64_t mc_tile = ((M + row_tiles - 1) / row_tiles + MR - 1) / MR * MR;
  row_tiles = (M + mc_tile - 1) / mc_tile;
  int64_t kc_max = std::min<int64_t>(Blk::KC, K);
  // Each thread packs its own A block and B panel: no shared buffer, so no barrier inside the
  // loop, and a thread that the OS takes away for a while just ends up with fewer tiles.
  // One allocation, outside the parallel region (an exception must not escape it).
  const int64_t per_thread = mc_tile * kc_max + kc_max * nc_tile;
  T* scratch = thread_scratch<T>(threads * per_thread);

#pragma omp parallel num_threads(threads) if (parallel)
  {
    T* a_packed = scratch + omp_get_thread_num() * per_thread;
    T* b_packed = a_packed + mc_tile * kc_max;
#pragma omp for schedule(dynamic, 1)
    for (int64_t tile = 0; tile < row_tiles * col_tiles; ++tile) {
      const int64_t i0 = (tile / col_tiles) * mc_tile, j0 = (tile % col_tiles) * nc_tile;
      const int64_t mc = std::min<int64_t>(mc_tile, M - i0), nc = std::min<int64_t>(nc_tile, N - j0);
      for (int64_t p0 = 0; p0 < K; p0 += Blk::KC) {
        const int64_t kc = std::min<int64_t>(Blk::KC, K - p0);
        const T step_beta = p0 == 0 ? beta : T(1);
        pack_a(A, M, K, trans_a, i0, mc, p0, kc, a_packed);
        for (int64_t s = 0; s < (nc + NR - 1) / NR; ++s) pack_b_sliver(B, N, K, trans_b, p0, kc, j0, nc, s, b_packed);
        for (int64_t jr = 0; jr < nc; jr += NR) {
          const int cols = static_cast<int>(std::min<int64_t>(NR, nc - jr));
          for (int64_t ir = 0; ir < mc; ir += MR) {
            const int rows = static_cast<int>(std::min<int64_t>(MR, mc - ir));
            micro_kernel(kc, a_packed + ir * kc, b_packed + jr * kc, C + (i0 + ir) * N + j0 + jr, N, step_beta, rows,
                         cols);
          }
        }
      }
    }
  }
}

template void matmul<float>(const float*, const float*, float*, int64_t, int64_t, int64_t, bool, bool, float);
template void matmul<double>(const double*, const double*, double*, int64_t, int64_t, int64_t, bool, bool, double);

}  // namespace nd::cpu

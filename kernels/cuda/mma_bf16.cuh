// Warp-level bf16 tensor-core primitives (sm_80+): ldmatrix loads of 8x8 b16 tiles from shared
// memory and mma.sync m16n8k16 with f32 accumulation. Fragment layouts (g = lane / 4, c = lane % 4):
//   A 16x16: a0 (row g, cols 2c..2c+1), a1 (row g+8, same cols), a2 (row g, cols 2c+8..), a3 (row g+8, cols 2c+8..)
//   B 16x8:  b0 (rows 2c..2c+1, col g), b1 (rows 2c+8..2c+9, col g)
//   C 16x8:  c0, c1 (row g, cols 2c, 2c+1), c2, c3 (row g+8, cols 2c, 2c+1)
#pragma once
#include <cuda_bf16.h>

#include <cstdint>

namespace nd::cuda::mma {

__device__ __forceinline__ uint32_t smem_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Four 8x8 tiles; lanes 8i..8i+7 give the row addresses of tile i. Lane t receives, of tile i,
// (row t/4, cols 2(t%4), 2(t%4)+1).
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* row_address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_address(row_address)));
}

// Same, transposed: lane t receives, of tile i, (rows 2(t%4), 2(t%4)+1, col t/4).
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* row_address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_address(row_address)));
}

// d (16x8, f32) += a (16x16, bf16) · b (16x8, bf16).
__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two floats as a bf16 pair, the first in the low half (the lower column of a fragment).
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

// The A fragment (16 rows x 16 columns) made of two adjacent C fragments (columns 0-7 and 8-15).
__device__ __forceinline__ void c_pair_to_a(uint32_t (&a)[4], const float (&left)[4], const float (&right)[4]) {
  a[0] = pack_bf16(left[0], left[1]);
  a[1] = pack_bf16(left[2], left[3]);
  a[2] = pack_bf16(right[0], right[1]);
  a[3] = pack_bf16(right[2], right[3]);
}

// Row address (for ldmatrix_x4) of lane `lane` for the A fragment at (row0, col0) of a row-major
// tile with leading dimension ld: tiles (rows +0, cols +0), (+8, +0), (+0, +8), (+8, +8).
template <typename E>
__device__ __forceinline__ const E* a_tile_row(const E* tile, int ld, int row0, int col0, int lane) {
  int i = lane / 8;
  return tile + (row0 + lane % 8 + (i & 1) * 8) * ld + col0 + (i & 2) * 4;
}

// Row address for two B fragments (n-blocks n0 and n0 + 8, k from k0) read from a tile stored as
// [n][k] row-major (e.g. K[key][dim] for Q·Kᵀ): r0, r1 = b0, b1 of block n0; r2, r3 of block n0 + 8.
template <typename E>
__device__ __forceinline__ const E* b_nk_row(const E* tile, int ld, int n0, int k0, int lane) {
  int i = lane / 8;
  return tile + (n0 + lane % 8 + (i & 2) * 4) * ld + k0 + (i & 1) * 8;
}

// Row address for two B fragments (n-blocks n0 and n0 + 8, k from k0) read with ldmatrix_x4_trans
// from a tile stored as [k][n] row-major (e.g. V[key][dim] for P·V).
template <typename E>
__device__ __forceinline__ const E* b_kn_row(const E* tile, int ld, int k0, int n0, int lane) {
  int i = lane / 8;
  return tile + (k0 + lane % 8 + (i & 1) * 8) * ld + n0 + (i & 2) * 4;
}

}  // namespace nd::cuda::mma

namespace nd::cuda::mma {

// 16 bytes global -> shared without passing through registers (cp.async, sm_80+); with
// `valid` false the destination is zero-filled and nothing is read.
__device__ __forceinline__ void cp_async16(void* shared_dst, const void* global_src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_address(shared_dst)), "l"(global_src),
               "r"(valid ? 16 : 0));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

// Waits until at most `kPending` of this thread's committed groups are still in flight.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

}  // namespace nd::cuda::mma

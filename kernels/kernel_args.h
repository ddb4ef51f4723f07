// Argument types shared by the CPU and CUDA kernel signatures, so that both backends of an op take
// the same arguments: where a backward kernel writes a gradient, the precision of the per-row
// statistics a forward saves for its backward, and which elements of a full tensor a slice holds.
#pragma once
#include <cstdint>
#include <type_traits>

#include "tensor/dtype.h"

namespace nd {

// One gradient a backward kernel writes: ptr null = not wanted; accumulate = add to what ptr holds
// (a later contribution), else overwrite it (the first one: the buffer may hold garbage, and the
// kernel writes every element of it).
template <typename T>
struct GradDest {
  T* ptr = nullptr;
  bool accumulate = false;
};

// Per-row statistics (mean, rstd, log-sum-exp, counts) are kept in at least f32: double for the
// f64 CPU reference, float for f32 and bf16.
template <typename T>
using StatType = std::conditional_t<std::is_same<T, double>::value, double, float>;

// Explicit instantiations of a CPU kernel template for f32 and for the f64 of the gradient checks.
#define ND_CPU_INSTANTIATE(macro) \
  macro(float);                   \
  macro(double)

// The elements of a full tensor that a slice of it holds, in the slice's order: `outer` groups
// `outer_stride` apart, each of `parts` runs `part_stride` apart, each run `run` consecutive
// elements, starting at full element `offset`. A tensor-parallel shard is one: rows of a
// (out, in) weight (outer 1), its columns (outer = out rows), or c_attn's q, k and v rows of this
// rank's heads (parts 3). Element j of the slice is full element full_index(j).
struct ElementSlice {
  int64_t outer = 1, outer_stride = 0;
  int64_t parts = 1, part_stride = 0;
  int64_t run = 0;
  int64_t offset = 0;

  // All of a tensor of n elements.
  static ElementSlice whole(int64_t n) { return ElementSlice{1, 0, 1, 0, n, 0}; }
  ND_HOST_DEVICE int64_t size() const { return outer * parts * run; }
  ND_HOST_DEVICE int64_t full_index(int64_t j) const {
    const int64_t q = j / run, r = j - q * run;  // run q of the slice, element r of it
    const int64_t o = q / parts, p = q - o * parts;
    return offset + o * outer_stride + p * part_stride + r;
  }
};

}  // namespace nd

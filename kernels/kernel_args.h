// Argument types shared by the CPU and CUDA kernel signatures, so that both backends of an op take
// the same arguments: where a backward kernel writes a gradient, and the precision of the per-row
// statistics a forward saves for its backward.
#pragma once
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

}  // namespace nd

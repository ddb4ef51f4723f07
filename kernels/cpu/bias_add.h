// Broadcast add of a row vector on the CPU: out = x + b over every row, and the gradient of b (a
// column sum). The tensor-parallel layers add a bias (or the position embedding) once, after the
// all-reduce that sums the ranks' partial outputs.
#pragma once
#include <cstdint>

namespace nd::cpu {

// x (M, N), b (N) -> out (M, N) = x[m] + b. out may be x.
template <typename T>
void bias_add_forward(const T* x, const T* b, T* out, int64_t M, int64_t N);

// dout (M, N) -> db (N) += sum over rows of dout, rows summed in order (deterministic).
template <typename T>
void bias_add_backward(const T* dout, T* db, int64_t M, int64_t N);

}  // namespace nd::cpu

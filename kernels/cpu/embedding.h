// Token + position embedding on the CPU: a gather of rows of wte plus the row of wpe for each
// position; backward scatters the gradient back in a fixed order (deterministic).
#pragma once
#include <cstdint>

#include "kernels/kernel_args.h"

namespace nd::cpu {

// idx (B, S) token ids; wte (V, C); wpe (>= S, C) -> out (B, S, C) with
// out[b, s] = wte[idx[b, s]] + wpe[s]. An id outside [0, V) is an nd::Error naming it, its
// position and V (checked before anything is read).
template <typename T>
void embedding_forward(const int32_t* idx, const T* wte, const T* wpe, T* out, int64_t B, int64_t S, int64_t C,
                       int64_t V);

// dout (B, S, C) -> dwte (V, C) (+)= the sum of dout[b, s] over the positions whose id is v (rows
// visited in (b, s) order), dwpe (P, C) with P >= S rows (+)= the sum over b of dout[b, s] (rows
// s >= S get nothing). Ids outside [0, V) contribute nothing.
template <typename T>
void embedding_backward(const int32_t* idx, const T* dout, GradDest<T> dwte, GradDest<T> dwpe, int64_t B, int64_t S,
                        int64_t C, int64_t V, int64_t P);

}  // namespace nd::cpu

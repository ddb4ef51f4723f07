// Token + position embedding on the CPU: a gather of rows of wte plus the row of wpe for each
// position; backward scatters the gradient back in a fixed order (deterministic).
#pragma once
#include <cstdint>

namespace nd::cpu {

// idx (B, S) token ids, already validated to lie in [0, V); wte (V, C); wpe (>= S, C)
// -> out (B, S, C) with out[b, s] = wte[idx[b, s]] + wpe[s].
template <typename T>
void embedding_forward(const int32_t* idx, const T* wte, const T* wpe, T* out, int64_t B, int64_t S, int64_t C);

// dout (B, S, C). Adds dwte[idx[b, s]] += dout[b, s] (rows visited in (b, s) order) and
// dwpe[s] += sum over b of dout[b, s]; a null gradient pointer skips that gradient.
template <typename T>
void embedding_backward(const int32_t* idx, const T* dout, T* dwte, T* dwpe, int64_t B, int64_t S, int64_t C);

}  // namespace nd::cpu

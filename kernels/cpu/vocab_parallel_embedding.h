// The token embedding of a vocabulary-parallel model on the CPU: each rank holds rows
// [vocab_start, vocab_start + Vl) of wte; an id outside them gives a zero row, so the sum over the
// ranks (reduce_from_tp) is the full lookup. Backward adds only the rows this rank holds.
#pragma once
#include <cstdint>

namespace nd::cpu {

// idx (n) global token ids; wte (Vl, C), the rows [vocab_start, vocab_start + Vl)
// -> out (n, C): out[i] = wte[idx[i] - vocab_start] when the id lies in this rank's rows, else 0.
template <typename T>
void vocab_parallel_embedding_forward(const int32_t* idx, const T* wte, T* out, int64_t n, int64_t C,
                                      int64_t vocab_start, int64_t Vl);

// dout (n, C) -> dwte (Vl, C) += dout[i] at row idx[i] - vocab_start for the ids in this rank's
// rows, positions visited in order (deterministic). Null dwte: nothing to do.
template <typename T>
void vocab_parallel_embedding_backward(const int32_t* idx, const T* dout, T* dwte, int64_t n, int64_t C,
                                       int64_t vocab_start, int64_t Vl);

}  // namespace nd::cpu

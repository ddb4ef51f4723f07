// The token orders of sequence parallelism. Between the tensor-parallel layers rank r holds positions
// [r * T / tp, (r + 1) * T / tp) of every sequence, (B, T / tp, ...). Inside a tensor-parallel region
// the gathered tokens are in *rank order*, (tp * B, T / tp, ...): block r = rank r's share, which is
// what an all-gather of the shares gives with no reordering pass. Token-wise layers (linears, GELU)
// do not care; attention and the loss's targets need the *sequence order* (B, T, ...). At B = 1 the
// two orders are the same memory, and the regrouping below is a view.
#pragma once
#include "autograd/variable.h"

namespace nd::dist {

// t (B, T, ...) in sequence order -> (tp * B, T / tp, ...) in rank order; any dtype (token ids,
// targets), a stream-ordered copy on the GPU (tp strided copies), a view at B = 1. T % tp != 0 is
// an nd::Error.
Tensor to_rank_order(const Tensor& t, int tp);
// t (tp * B, T / tp, ...) in rank order -> (B, T, ...) in sequence order.
Tensor to_sequence_order(const Tensor& t, int tp);

// The same as differentiable ops: backward regroups the gradient the other way.
Variable rank_order(const Variable& x, int tp);
Variable sequence_order(const Variable& x, int tp);

}  // namespace nd::dist

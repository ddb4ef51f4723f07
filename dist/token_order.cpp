// Regrouping between sequence order (B, T, ...) and rank order (tp * B, T / tp, ...): for each rank
// block r, B rows of T / tp tokens that are T tokens apart on one side and contiguous on the other:
// one 2-D copy per block (cudaMemcpy2DAsync on the compute stream, so CUDA-graph safe; memcpy on
// the host).
#include "dist/token_order.h"

#include <cstring>

#include "autograd/ops.h"
#include "autograd/parallel_ops.h"
#if NANODIST_WITH_CUDA
#include "tensor/cuda_check.h"
#include "tensor/cuda_stream.h"
#endif

namespace nd::dist {
namespace {

// Copies `rows` rows of `width` bytes from src (rows `src_pitch` bytes apart) to dst (`dst_pitch`).
void copy_2d(char* dst, size_t dst_pitch, const char* src, size_t src_pitch, size_t width, size_t rows,
             Device device) {
  if (width == 0 || rows == 0) return;
  if (device.is_cuda()) {
#if NANODIST_WITH_CUDA
    CUDA_CHECK(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, rows, cudaMemcpyDeviceToDevice,
                                 compute_stream(device.index)));
    return;
#else
    ND_FAIL("this nanodist was built without CUDA");
#endif
  }
  for (size_t i = 0; i < rows; ++i) std::memcpy(dst + i * dst_pitch, src + i * src_pitch, width);
}

// Regroups between seq (B, T, rest...) and ranked (tp * B, T / tp, rest...); to_ranked picks the way.
void regroup(const Tensor& seq, const Tensor& ranked, int tp, bool to_ranked) {
  const int64_t B = seq.size(0), T = seq.size(1);
  const size_t row = seq.nbytes() / static_cast<size_t>(B * T);  // bytes of one token
  const size_t share = row * static_cast<size_t>(T / tp);          // one sequence's share of a rank
  char* s = static_cast<char*>(seq.raw_data());
  char* k = static_cast<char*>(ranked.raw_data());
  for (int r = 0; r < tp; ++r) {
    char* seq_block = s + r * share;                        // row b at + b * T * row
    char* rank_block = k + static_cast<size_t>(r * B) * share;  // row b at + b * share
    if (to_ranked)
      copy_2d(rank_block, share, seq_block, row * T, share, B, seq.device());
    else
      copy_2d(seq_block, row * T, rank_block, share, share, B, seq.device());
  }
}

Shape ranked_shape(const Tensor& t, int tp) {
  ND_CHECK(t.ndim() >= 2 && tp >= 1 && t.size(1) % tp == 0,
           "sequence parallelism: tensor-parallel size " << tp << " does not divide the sequence length of "
                                                         << t.str());
  Shape shape = t.shape();
  shape[0] *= tp;
  shape[1] /= tp;
  return shape;
}

Shape sequence_shape(const Tensor& t, int tp) {
  ND_CHECK(t.ndim() >= 2 && tp >= 1 && t.size(0) % tp == 0,
           "to_sequence_order: " << t.str() << " is not (tp * B, T / tp, ...) for tp " << tp);
  Shape shape = t.shape();
  shape[0] /= tp;
  shape[1] *= tp;
  return shape;
}

}  // namespace

Tensor to_rank_order(const Tensor& t, int tp) {
  const Shape shape = ranked_shape(t, tp);
  if (t.size(0) == 1) return t.view(shape);
  Tensor out = Tensor::empty(shape, t.dtype(), t.device());
  regroup(t, out, tp, true);
  return out;
}

Tensor to_sequence_order(const Tensor& t, int tp) {
  const Shape shape = sequence_shape(t, tp);
  if (shape[0] == 1) return t.view(shape);
  Tensor out = Tensor::empty(shape, t.dtype(), t.device());
  regroup(out, t, tp, false);
  return out;
}

Variable rank_order(const Variable& x, int tp) {
  return make_result(to_rank_order(x.data(), tp), {x.without_data()},
                     [tp](const Tensor& grad_out, std::vector<Variable>& in) {
                       if (in[0].requires_grad()) ops::pass_gradient(to_sequence_order(grad_out, tp), in[0]);
                     });
}

Variable sequence_order(const Variable& x, int tp) {
  return make_result(to_sequence_order(x.data(), tp), {x.without_data()},
                     [tp](const Tensor& grad_out, std::vector<Variable>& in) {
                       if (in[0].requires_grad()) ops::pass_gradient(to_rank_order(grad_out, tp), in[0]);
                     });
}

}  // namespace nd::dist

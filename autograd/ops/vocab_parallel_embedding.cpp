// ops::vocab_parallel_embedding: this rank's rows of the token embedding, zeros for ids another
// rank holds (so an id outside the vocabulary reads nothing on any rank). Batches are validated
// where they are made; on the CPU the ids are checked here too, for direct callers, at no device
// cost. Backward reads only idx, of which the closure keeps a copy.
#include "kernels/cpu/vocab_parallel_embedding.h"

#include "autograd/dispatch.h"
#include "autograd/parallel_ops.h"
#include "kernels/cuda/vocab_parallel_embedding.h"

namespace nd::ops {

namespace {

struct VocabEmbeddingDims {
  int64_t n, C, vocab_start, Vl;
};

void check_ids(const Tensor& idx, int64_t vocab_rows) {
  const int32_t* ids = idx.data<int32_t>();
  const Tensor& host = idx;
  for (int64_t i = 0; i < host.numel(); ++i)
    ND_CHECK(ids[i] >= 0 && ids[i] < vocab_rows, "vocab_parallel_embedding: token id "
                                                     << ids[i] << " at position " << i
                                                     << " is outside the vocabulary of size " << vocab_rows);
}

void forward_on_device(const Tensor& idx, const Tensor& wte, Tensor& out, const VocabEmbeddingDims& d) {
  ND_DISPATCH_KERNEL(wte, "vocab_parallel_embedding",
                     backend::vocab_parallel_embedding_forward(idx.data<int32_t>(), wte.data<scalar_t>(),
                                                               out.data<scalar_t>(), d.n, d.C, d.vocab_start, d.Vl));
}

void backward_on_device(const Tensor& dout, const Tensor& idx, const Tensor& dwte, const VocabEmbeddingDims& d) {
  ND_DISPATCH_KERNEL(dout, "vocab_parallel_embedding backward",
                     backend::vocab_parallel_embedding_backward(idx.data<int32_t>(), dout.data<scalar_t>(),
                                                                dwte.data<scalar_t>(), d.n, d.C, d.vocab_start, d.Vl));
}

}  // namespace

Variable vocab_parallel_embedding(const Tensor& idx, const Variable& wte, int64_t vocab_start, int64_t vocab_rows) {
  const Tensor& w = wte.data();
  ND_CHECK(idx.ndim() == 2, "vocab_parallel_embedding: idx must be (B, T), got " << idx.str());
  check_dtype(idx, DType::I32, "vocab_parallel_embedding: idx");
  check_device(idx, w.device(), "vocab_parallel_embedding: idx");
  ND_CHECK(w.ndim() == 2, "vocab_parallel_embedding: wte must be (Vl, C), got " << w.str());
  ND_CHECK(vocab_start >= 0 && vocab_start + w.size(0) <= vocab_rows,
           "vocab_parallel_embedding: rows [" << vocab_start << ", " << vocab_start + w.size(0) << ") of wte "
                                              << shape_str(w.shape()) << " do not lie in the vocabulary of size "
                                              << vocab_rows);
  if (idx.device().is_cpu()) check_ids(idx, vocab_rows);
  const VocabEmbeddingDims d{idx.numel(), w.size(1), vocab_start, w.size(0)};
  Tensor out = Tensor::empty({idx.size(0), idx.size(1), d.C}, w.dtype(), w.device());
  forward_on_device(idx, w, out, d);
  // A private copy of the ids (B*T ints): the caller may refill its batch buffer before backward.
  Tensor saved_idx = grad_enabled() && wte.requires_grad() ? idx.clone() : Tensor();
  return make_result(out, {wte}, [saved_idx, d](const Tensor& grad_out, std::vector<Variable>& in) {
    if (in[0].requires_grad()) backward_on_device(grad_out, saved_idx, accumulating_grad(in[0]), d);
  });
}

}  // namespace nd::ops

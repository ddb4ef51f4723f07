// ops::embedding: token + position embedding, out[b, t] = wte[idx[b, t]] + wpe[t]. The kernels
// check the ids (never an out-of-bounds read): the CPU raises at once, the GPU records the bad id
// for check_recorded_token_ids without a host sync. Batches are validated once, where they are
// made; this is the backstop. Backward reads only idx, of which the closure keeps a copy.
#include "autograd/dispatch.h"
#include "autograd/ops.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cuda/embedding.h"
#include "kernels/cuda/token_errors.h"

namespace nd::ops {

namespace {

struct EmbeddingDims {
  int64_t B, T, C, V;
};

EmbeddingDims embedding_dims(const Tensor& idx, const Tensor& wte, const Tensor& wpe) {
  ND_CHECK(idx.ndim() == 2, "embedding: idx must be (B, T), got " << idx.str());
  ND_CHECK(idx.dtype() == DType::I32, "embedding: idx must be i32 token ids, got " << idx.str());
  ND_CHECK(wte.ndim() == 2, "embedding: wte must be (V, C), got " << wte.str());
  ND_CHECK(wpe.ndim() == 2, "embedding: wpe must be (Tmax, C), got " << wpe.str());
  ND_CHECK(wpe.size(1) == wte.size(1),
           "embedding: wte " << shape_str(wte.shape()) << " and wpe " << shape_str(wpe.shape()) << " differ in C");
  ND_CHECK(idx.size(1) <= wpe.size(0), "embedding: sequence length "
                                           << idx.size(1) << " (idx " << shape_str(idx.shape()) << ") exceeds the "
                                           << wpe.size(0) << " positions of wpe " << shape_str(wpe.shape()));
  ND_CHECK(wpe.dtype() == wte.dtype(),
           "embedding: wte " << wte.str() << " and wpe " << wpe.str() << " differ in dtype");
  ND_CHECK(
      wpe.device() == wte.device() && idx.device() == wte.device(),
      "embedding: idx " << idx.str() << ", wte " << wte.str() << " and wpe " << wpe.str() << " must be on one device");
  return {idx.size(0), idx.size(1), wte.size(1), wte.size(0)};
}

}  // namespace

Variable embedding(const Tensor& idx, const Variable& wte, const Variable& wpe) {
  const EmbeddingDims d = embedding_dims(idx, wte.data(), wpe.data());
  const Tensor& te = wte.data();
  Tensor out = Tensor::empty({d.B, d.T, d.C}, te.dtype(), te.device());
  ND_DISPATCH_KERNEL(te, "embedding",
                     backend::embedding_forward(idx.data<int32_t>(), te.data<scalar_t>(), wpe.data().data<scalar_t>(),
                                                out.data<scalar_t>(), d.B, d.T, d.C, d.V));
  // A private copy of the ids (B*T ints): the caller may refill its batch buffer before backward.
  const bool records = grad_enabled() && (wte.requires_grad() || wpe.requires_grad());
  Tensor saved_idx = records ? idx.clone() : Tensor();
  const int64_t positions = wpe.data().size(0);
  return make_result(out, {wte, wpe}, [saved_idx, d, positions](const Tensor& grad_out, std::vector<Variable>& in) {
    const GradSlot dwte = in[0].grad_slot(), dwpe = in[1].grad_slot();
    ND_DISPATCH_KERNEL(grad_out, "embedding backward",
                       backend::embedding_backward(saved_idx.data<int32_t>(), grad_out.data<scalar_t>(),
                                                   grad_dest<scalar_t>(dwte), grad_dest<scalar_t>(dwpe), d.B, d.T,
                                                   d.C, d.V, positions));
  });
}

void check_recorded_token_ids(Device device) {
  if (!device.is_cuda()) return;
#if NANODIST_WITH_CUDA
  cuda::check_token_errors(device.index);
#endif
}

}  // namespace nd::ops

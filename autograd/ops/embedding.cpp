// ops::embedding: token + position embedding, out[b, t] = wte[idx[b, t]] + wpe[t]. The ids are
// checked here (an id outside the vocabulary is an nd::Error, never an out-of-bounds read) unless
// the caller vouches for them (autograd/trusted_token_ids.h); backward reads only idx, of which
// the closure keeps a copy.
#include "autograd/dispatch.h"
#include "autograd/ops.h"
#include "autograd/trusted_token_ids.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cuda/dispatch.h"
#include "kernels/cuda/embedding.h"

namespace nd::ops {

namespace {

thread_local bool g_token_ids_trusted = false;

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

// Every id must index a row of wte. On the GPU the ids are copied to the host for the check.
void check_token_ids(const Tensor& idx, int64_t vocab) {
  Tensor host = idx.device().is_cpu() ? idx : idx.to(Device::cpu());
  const int32_t* ids = host.data<int32_t>();
  for (int64_t i = 0; i < host.numel(); ++i)
    ND_CHECK(ids[i] >= 0 && ids[i] < vocab, "embedding: token id " << ids[i] << " at position " << i
                                                                   << " is outside the vocabulary of size " << vocab);
}

void embedding_forward_on_device(const Tensor& idx, const Tensor& wte, const Tensor& wpe, Tensor& out,
                                 const EmbeddingDims& d) {
  if (wte.device().is_cuda()) {
    ND_DISPATCH_CUDA_FLOAT(wte.dtype(), "embedding",
                           cuda::embedding_forward(idx.data<int32_t>(), wte.data<scalar_t>(), wpe.data<scalar_t>(),
                                                   out.data<scalar_t>(), d.B, d.T, d.C));
    return;
  }
  ND_DISPATCH_CPU_FLOAT(wte.dtype(), "embedding",
                        cpu::embedding_forward(idx.data<int32_t>(), wte.data<scalar_t>(), wpe.data<scalar_t>(),
                                               out.data<scalar_t>(), d.B, d.T, d.C));
}

// Adds into whichever of dwte (V, C), dwpe (Tmax, C) is non-null.
void embedding_backward_on_device(const Tensor& dout, const Tensor& idx, Tensor* dwte, Tensor* dwpe,
                                  const EmbeddingDims& d) {
  if (dout.device().is_cuda()) {
    ND_DISPATCH_CUDA_FLOAT(
        dout.dtype(), "embedding backward",
        cuda::embedding_backward(idx.data<int32_t>(), dout.data<scalar_t>(), dwte ? dwte->data<scalar_t>() : nullptr,
                                 dwpe ? dwpe->data<scalar_t>() : nullptr, d.B, d.T, d.C, d.V));
    return;
  }
  ND_DISPATCH_CPU_FLOAT(
      dout.dtype(), "embedding backward",
      cpu::embedding_backward(idx.data<int32_t>(), dout.data<scalar_t>(), dwte ? dwte->data<scalar_t>() : nullptr,
                              dwpe ? dwpe->data<scalar_t>() : nullptr, d.B, d.T, d.C));
}

}  // namespace

TrustedTokenIdsGuard::TrustedTokenIdsGuard() : previous_(g_token_ids_trusted) { g_token_ids_trusted = true; }
TrustedTokenIdsGuard::~TrustedTokenIdsGuard() { g_token_ids_trusted = previous_; }
bool token_ids_trusted() { return g_token_ids_trusted; }

Variable embedding(const Tensor& idx, const Variable& wte, const Variable& wpe) {
  const EmbeddingDims d = embedding_dims(idx, wte.data(), wpe.data());
  if (!g_token_ids_trusted) check_token_ids(idx, d.V);
  Tensor out = Tensor::empty({d.B, d.T, d.C}, wte.dtype(), wte.device());
  embedding_forward_on_device(idx, wte.data(), wpe.data(), out, d);
  // A private copy of the ids (B*T ints): the caller may refill its batch buffer before backward.
  const bool records = grad_enabled() && (wte.requires_grad() || wpe.requires_grad());
  Tensor saved_idx = records ? idx.clone() : Tensor();
  return make_result(out, {wte, wpe}, [saved_idx, d](const Tensor& grad_out, std::vector<Variable>& in) {
    Tensor* dwte = in[0].requires_grad() ? &in[0].grad_buffer() : nullptr;
    Tensor* dwpe = in[1].requires_grad() ? &in[1].grad_buffer() : nullptr;
    embedding_backward_on_device(grad_out, saved_idx, dwte, dwpe, d);
  });
}

}  // namespace nd::ops

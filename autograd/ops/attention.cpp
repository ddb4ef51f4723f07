// ops::attention: causal multi-head self-attention over a packed qkv tensor, with optional dropout
// on the probabilities. Backward reads qkv from the input and what the forward kernel saved (on the
// CPU, the probabilities (B, NH, T, T)); the dropout mask is redrawn from its Philox counters.
#include "autograd/dispatch.h"
#include "autograd/ops.h"
#include "kernels/cpu/attention.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/dispatch.h"

namespace nd::ops {

namespace {

struct AttentionDims {
  int64_t B, T, C, NH;
};

AttentionDims attention_dims(const Tensor& qkv, int n_head) {
  ND_CHECK(qkv.ndim() == 3, "attention: qkv must be (B, T, 3C), got " << qkv.str());
  const int64_t C3 = qkv.size(2);
  ND_CHECK(C3 > 0 && C3 % 3 == 0,
           "attention: the last dimension of qkv " << shape_str(qkv.shape()) << " is not divisible by 3");
  const int64_t C = C3 / 3;
  ND_CHECK(n_head > 0 && C % n_head == 0,
           "attention: C = " << C << " (qkv " << shape_str(qkv.shape()) << ") is not divisible by n_head = " << n_head);
  return {qkv.size(0), qkv.size(1), C, n_head};
}

// Forward on qkv's device: fills out (B, T, C) and returns what backward reads besides qkv
// (on the CPU, the probabilities (B, NH, T, T)).
Tensor attention_forward_on_device(const Tensor& qkv, Tensor& out, const AttentionDims& d,
                                   const AttentionDropout& drop) {
  if (qkv.device().is_cuda()) {
    // The GPU saves only the per-row log-sum-exp (B, NH, T) in f32; backward recomputes the rest.
    Tensor lse = Tensor::empty({d.B, d.NH, d.T}, DType::F32, qkv.device());
    ND_DISPATCH_CUDA_FLOAT(qkv.dtype(), "attention",
                           cuda::attention_forward(qkv.data<scalar_t>(), out.data<scalar_t>(), lse.data<float>(), d.B,
                                                   d.T, d.C, d.NH, drop));
    return lse;
  }
  Tensor probs = Tensor::empty({d.B, d.NH, d.T, d.T}, qkv.dtype(), qkv.device());
  ND_DISPATCH_CPU_FLOAT(qkv.dtype(), "attention",
                        cpu::attention_forward(qkv.data<scalar_t>(), out.data<scalar_t>(), probs.data<scalar_t>(),
                                               d.B, d.T, d.C, d.NH, drop));
  return probs;
}

// Backward on qkv's device: dqkv (B, T, 3C) += the gradient through the attention; `saved` is
// what the forward returned.
void attention_backward_on_device(const Tensor& dout, const Tensor& qkv, const Tensor& out, const Tensor& saved,
                                  Tensor& dqkv, const AttentionDims& d, const AttentionDropout& drop) {
  if (qkv.device().is_cuda()) {
    ND_DISPATCH_CUDA_FLOAT(qkv.dtype(), "attention backward",
                           cuda::attention_backward(dout.data<scalar_t>(), qkv.data<scalar_t>(), out.data<scalar_t>(),
                                                    saved.data<float>(), dqkv.data<scalar_t>(), d.B, d.T, d.C, d.NH,
                                                    drop));
    return;
  }
  ND_DISPATCH_CPU_FLOAT(qkv.dtype(), "attention backward",
                        cpu::attention_backward(dout.data<scalar_t>(), qkv.data<scalar_t>(), saved.data<scalar_t>(),
                                                dqkv.data<scalar_t>(), d.B, d.T, d.C, d.NH, drop));
}

}  // namespace

Variable attention(const Variable& qkv, int n_head, float dropout, Generator* gen, bool training, int first_head,
                   int total_heads) {
  const Tensor& x = qkv.data();
  const AttentionDims d = attention_dims(x, n_head);
  ND_CHECK(dropout >= 0.0f && dropout <= 1.0f,
           "attention: dropout must lie in [0, 1], got " << dropout << " for qkv " << shape_str(x.shape()));
  ND_CHECK(total_heads == 0 || (first_head >= 0 && first_head + n_head <= total_heads),
           "attention: heads [" << first_head << ", " << first_head + n_head << ") do not lie in the "
                                << total_heads << " heads of the model");
  AttentionDropout drop;  // inactive (p = 0) unless training with a generator
  if (training && dropout > 0.0f && gen != nullptr) {
    const int64_t all_heads = total_heads > 0 ? total_heads : d.NH;
    drop.p = dropout;
    drop.seed = gen->seed();
    drop.stream = gen->stream();
    drop.first = gen->advance(static_cast<uint64_t>(d.B * all_heads * d.T * d.T));
    if (total_heads > 0) {
      drop.first_head = first_head;
      drop.local_heads = d.NH;
      drop.total_heads = total_heads;
    }
  }
  Tensor out = Tensor::empty({d.B, d.T, d.C}, x.dtype(), x.device());
  Tensor saved = attention_forward_on_device(x, out, d, drop);
  // The GPU backward also reads the output (for rowsum(dout * out)); on the CPU it is unused.
  Tensor kept_out = x.device().is_cuda() ? out : Tensor();
  return make_result(out, {qkv}, [saved, kept_out, d, drop](const Tensor& grad_out, std::vector<Variable>& inputs) {
    if (!inputs[0].requires_grad()) return;
    attention_backward_on_device(grad_out, inputs[0].data(), kept_out, saved, inputs[0].grad_buffer(), d, drop);
  });
}

}  // namespace nd::ops

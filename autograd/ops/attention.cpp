// ops::attention: causal multi-head self-attention over a packed qkv tensor, with optional dropout
// on the probabilities. Backward reads qkv from the input, the output, and each row's log-sum-exp
// that the forward saved; the dropout mask is redrawn from its Philox counters. The kernel is ours
// (CPU or CUDA) or, when asked for, cuDNN's fused attention.
#include "autograd/dispatch.h"
#include "autograd/ops.h"
#include "kernels/cpu/attention.h"
#include "kernels/cuda/attention.h"
#include "kernels/cudnn/attention_cudnn.h"

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

// nd::Error unless cuDNN attention can run on x: bf16 or f16 on a GPU, a build and GPU that have it.
void check_cudnn_input(const Tensor& x) {
  ND_CHECK(x.device().is_cuda() && (x.dtype() == DType::BF16 || x.dtype() == DType::F16),
           "attention: the cuDNN kernel takes bf16 or f16 on a GPU, got " << x.str()
                                                                          << " (use the default kernel there)");
  std::string why;
  ND_CHECK(cudnn::attention_available(&why), "attention: " << why);
}

}  // namespace

Variable attention(const Variable& qkv, int n_head, float dropout, Generator* gen, bool training, int first_head,
                   int total_heads, AttentionKernel kernel) {
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
    drop.set_counters(gen->reserve(static_cast<uint64_t>(d.B * all_heads * d.T * d.T)));
    if (total_heads > 0) {
      drop.first_head = first_head;
      drop.local_heads = d.NH;
      drop.total_heads = total_heads;
    }
  }
  Tensor out = Tensor::empty({d.B, d.T, d.C}, x.dtype(), x.device());
  // Causal: half of the (T, T) products. Forward q kᵀ and p v; backward recomputes q kᵀ and adds
  // d(p) = dO vᵀ, dv, dq and dk: 2 and 5 products of 2 B T² C FLOPs, halved.
  const double products = static_cast<double>(d.B) * static_cast<double>(d.T) * static_cast<double>(d.T) *
                          static_cast<double>(d.C);
  if (op_timer::enabled()) op_timer::note_next({2.0 * products, 0.0, ""});
  // Backward recomputes the probabilities from each row's log-sum-exp (B, NH, T).
  Tensor lse = Tensor::empty({d.B, d.NH, d.T}, stat_dtype(x.dtype()), x.device());
  if (kernel == AttentionKernel::Cudnn) {
    check_cudnn_input(x);
    op_timer::Scope timed("attention (cudnn)", x);
    if (x.dtype() == DType::F16)
      cudnn::attention_forward(x.data<f16>(), out.data<f16>(), lse.data<float>(), d.B, d.T, d.C, d.NH, drop);
    else
      cudnn::attention_forward(x.data<bf16>(), out.data<bf16>(), lse.data<float>(), d.B, d.T, d.C, d.NH, drop);
  } else {
    ND_DISPATCH_KERNEL(x, "attention",
                       backend::attention_forward(x.data<scalar_t>(), out.data<scalar_t>(),
                                                  lse.data<StatType<scalar_t>>(), d.B, d.T, d.C, d.NH, drop));
  }
  return make_result(out, {qkv}, [out, lse, d, drop, products, kernel](const Tensor& grad_out,
                                                                     std::vector<Variable>& inputs) {
    const Tensor& x = inputs[0].data();
    const GradSlot dqkv = inputs[0].grad_slot();
    if (op_timer::enabled()) op_timer::note_next({5.0 * products, 0.0, ""});
    if (kernel == AttentionKernel::Cudnn) {
      op_timer::Scope timed("attention backward (cudnn)", x);
      if (x.dtype() == DType::F16)
        cudnn::attention_backward(grad_out.data<f16>(), x.data<f16>(), out.data<f16>(), lse.data<float>(),
                                  grad_dest<f16>(dqkv), d.B, d.T, d.C, d.NH, drop);
      else
        cudnn::attention_backward(grad_out.data<bf16>(), x.data<bf16>(), out.data<bf16>(), lse.data<float>(),
                                  grad_dest<bf16>(dqkv), d.B, d.T, d.C, d.NH, drop);
      return;
    }
    ND_DISPATCH_KERNEL(x, "attention backward",
                       backend::attention_backward(grad_out.data<scalar_t>(), x.data<scalar_t>(), out.data<scalar_t>(),
                                                   lse.data<StatType<scalar_t>>(), grad_dest<scalar_t>(dqkv), d.B,
                                                   d.T, d.C, d.NH, drop));
  });
}

}  // namespace nd::ops

// ops::fp8_linear (fp8_linear.h): checks, code buffers from the caching allocator, the kernels.
#include "autograd/ops/fp8_linear.h"

#include "autograd/ops/linear_dims.h"
#include "autograd/without_forward.h"
#include "tensor/error.h"
#include "tensor/op_timer.h"

#if NANODIST_WITH_CUDA
#include "autograd/ops/fp8_op_buffers.h"
#endif

namespace nd::ops {

#if NANODIST_WITH_CUDA
using namespace fp8_op;
#endif

Variable fp8_linear(const Variable& x, const Variable& w, const Variable& b, const Tensor& scalars) {
  const bool has_bias = b.defined();
  const Tensor& xd = x.data();
  const LinearDims d = linear_dims("fp8_linear", xd, w.data(), has_bias ? &b.data() : nullptr);
  ND_CHECK(xd.device().is_cuda() && xd.dtype() == DType::BF16,
           "fp8_linear: x must be bf16 on a GPU, got " << xd.str());
  ND_CHECK(scalars.dtype() == DType::F32 && scalars.numel() == kFp8LinearScalars && scalars.device() == xd.device(),
           "fp8_linear: scalars must be " << kFp8LinearScalars << " f32 on x's device, got " << scalars.str());
#if NANODIST_WITH_CUDA
  Shape out_shape = xd.shape();
  out_shape.back() = d.N;
  // Without its forward (autograd/without_forward.h) only the transposed codes backward reads are
  // written: no output, no GEMM.
  const bool skipped = forward_skipped();
  Tensor out = skipped ? Tensor() : Tensor::empty(out_shape, DType::BF16, xd.device());
  // The transposes are written only for the backward GEMM that reads them: x_t for dw, w_t for dx.
  const bool records = grad_enabled() && (x.requires_grad() || w.requires_grad() || (has_bias && b.requires_grad()));
  const bool need_x_t = records && w.requires_grad(), need_w_t = records && x.requires_grad();
  Tensor x_t = need_x_t ? code_buffer(d.M * d.K, xd.device()) : Tensor();
  Tensor w_t = need_w_t ? code_buffer(d.N * d.K, xd.device()) : Tensor();
  const Slots s = slots_of(scalars);
  const double flops = gemm_flops(d);
  if (skipped) {
    op_timer::Scope timed("fp8_linear codes", xd);
    cuda::fp8_linear_forward_saved_codes(xd.data<bf16>(), w.data().data<bf16>(), d.M, d.N, d.K, s.x, s.w,
                                         {nullptr, bytes(x_t), nullptr, bytes(w_t), nullptr, nullptr});
  } else {
    Tensor x_codes = code_buffer(d.M * d.K, xd.device()), w_codes = code_buffer(d.N * d.K, xd.device());
    if (op_timer::enabled()) op_timer::note_next({flops, 0.0, gemm_label(d)});
    op_timer::Scope timed("fp8_linear", xd);
    cuda::Fp8LinearBuffers buf{bytes(x_codes), bytes(x_t), bytes(w_codes), bytes(w_t), nullptr, nullptr};
    cuda::fp8_linear_forward(xd.data<bf16>(), w.data().data<bf16>(), has_bias ? b.data().data<bf16>() : nullptr,
                             out.data<bf16>(), d.M, d.N, d.K, s.x, s.w, buf);
  }
  // Backward reads x and w only through their transposed codes: both inputs stay graph edges
  // without their values.
  std::vector<Variable> inputs = {x.without_data(), w.without_data()};
  if (has_bias) inputs.push_back(b.without_data());
  auto backward = [d, flops, scalars, x_t, w_t](const Tensor& grad_out, std::vector<Variable>& in) {
    const GradSlot dx = in[0].grad_slot(), dw = in[1].grad_slot();
    const GradSlot db = in.size() > 2 ? in[2].grad_slot() : GradSlot();
    ND_CHECK(grad_out.dtype() == DType::BF16, "fp8_linear backward: the output's gradient must be bf16");
    // Forward wrote the transposes for the gradients wanted then; one wanted now must have one.
    ND_CHECK((!dx.wanted() || w_t.defined()) && (!dw.wanted() || x_t.defined()),
             "fp8_linear backward: a gradient is wanted that did not need one in forward");
    Tensor dout_codes = dx.wanted() ? code_buffer(d.M * d.N, grad_out.device()) : Tensor();
    Tensor dout_t = dw.wanted() ? code_buffer(d.M * d.N, grad_out.device()) : Tensor();
    const Slots s = slots_of(scalars);
    cuda::Fp8LinearBuffers buf{nullptr, bytes(x_t), nullptr, bytes(w_t), bytes(dout_codes), bytes(dout_t)};
    if (op_timer::enabled())
      op_timer::note_next({flops * ((dx.wanted() ? 1 : 0) + (dw.wanted() ? 1 : 0)), 0.0,
                           gemm_label(d)});
    op_timer::Scope timed("fp8_linear backward", grad_out);
    cuda::fp8_linear_backward(grad_out.data<bf16>(), dest(dx), dest(dw), dest(db), d.M, d.N, d.K, s.x, s.w, s.dout,
                              buf);
  };
  if (skipped) return make_result_without_value({out_shape, DType::BF16, xd.device()}, std::move(inputs), backward);
  return make_result(out, std::move(inputs), backward);
#else
  (void)d;
  ND_FAIL("fp8_linear: this nanodist was built without CUDA");
#endif
}

}  // namespace nd::ops

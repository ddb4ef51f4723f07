// ops::fp8_gelu_mlp (fp8_gelu_mlp.h). Forward: c_fc's FP8 linear into h (bf16, saved), the GELU
// quantise of h into c_proj's x codes (kernels/cuda/fp8_gelu_quantize.h), c_proj's FP8 GEMM from
// them. Backward: c_proj's FP8 backward with its input gradient dg into a bf16 temporary, the GELU
// gradient quantise of (dg, h) into c_fc's output-gradient codes with c_fc's bias sums, c_fc's two
// GEMMs. Each linear's transposed codes are kept from forward to backward, as fp8_linear keeps them.
#include "autograd/ops/fp8_gelu_mlp.h"

#include "autograd/ops/fp8_linear.h"
#include "autograd/ops/linear_dims.h"
#include "autograd/without_forward.h"
#include "tensor/error.h"
#include "tensor/op_timer.h"

#if NANODIST_WITH_CUDA
#include "autograd/ops/fp8_op_buffers.h"
#include "kernels/cuda/fp8_gelu_quantize.h"
#include "kernels/cuda/gelu.h"
#endif

namespace nd::ops {

#if NANODIST_WITH_CUDA
namespace {

using namespace fp8_op;

// What backward reads: the GELU input and the transposed codes of each linear's x and w (a null
// tensor where no gradient needs it).
struct Fp8GeluMlpSaved {
  Tensor h, fc_x_t, fc_w_t, proj_x_t, proj_w_t;
};

// The inputs as the node keeps them: x, fc_w, proj_w, then the biases that are defined.
struct Fp8GeluMlpInputs {
  bool fc_bias, proj_bias;
  int fc_b() const { return 3; }
  int proj_b() const { return fc_bias ? 4 : 3; }
};

void check_scalars(const Tensor& scalars, const Tensor& x, const char* which) {
  ND_CHECK(scalars.dtype() == DType::F32 && scalars.numel() == kFp8LinearScalars && scalars.device() == x.device(),
           "fp8_gelu_mlp: " << which << " scalars must be " << kFp8LinearScalars << " f32 on x's device, got "
                            << scalars.str());
}

}  // namespace
#endif

Variable fp8_gelu_mlp(const Variable& x, const Variable& fc_w, const Variable& fc_b, const Tensor& fc_scalars,
                      const Variable& proj_w, const Variable& proj_b, const Tensor& proj_scalars) {
  const Tensor& xd = x.data();
  ND_CHECK(xd.device().is_cuda() && xd.dtype() == DType::BF16, "fp8_gelu_mlp: x must be bf16 on a GPU, got " << xd.str());
  const LinearDims fc = linear_dims("fp8_gelu_mlp (fc)", xd, fc_w.data(), fc_b.defined() ? &fc_b.data() : nullptr);
#if NANODIST_WITH_CUDA
  check_scalars(fc_scalars, xd, "fc");
  check_scalars(proj_scalars, xd, "proj");
  Shape hidden_shape = xd.shape();
  hidden_shape.back() = fc.N;
  Fp8GeluMlpSaved saved;
  saved.h = Tensor::empty(hidden_shape, DType::BF16, xd.device());
  const LinearDims proj =
      linear_dims("fp8_gelu_mlp (proj)", saved.h, proj_w.data(), proj_b.defined() ? &proj_b.data() : nullptr);
  Shape out_shape = xd.shape();
  out_shape.back() = proj.N;
  // Without its forward (autograd/without_forward.h) c_fc and the GELU quantise still run, for what
  // backward reads, but c_proj writes only its weight's transposed codes: no output, no GEMM.
  const bool skipped = forward_skipped();
  Tensor out = skipped ? Tensor() : Tensor::empty(out_shape, DType::BF16, xd.device());

  // Which gradients backward will make, as the two fp8_linears would decide: c_proj's input needs
  // one when anything of c_fc does.
  const bool fc_chain = x.requires_grad() || fc_w.requires_grad() || (fc_b.defined() && fc_b.requires_grad());
  const bool records =
      grad_enabled() && (fc_chain || proj_w.requires_grad() || (proj_b.defined() && proj_b.requires_grad()));
  const Device dev = xd.device();
  if (records && fc_w.requires_grad()) saved.fc_x_t = code_buffer(fc.M * fc.K, dev);
  if (records && x.requires_grad()) saved.fc_w_t = code_buffer(fc.N * fc.K, dev);
  if (records && proj_w.requires_grad()) saved.proj_x_t = code_buffer(proj.M * proj.K, dev);
  if (records && fc_chain) saved.proj_w_t = code_buffer(proj.N * proj.K, dev);
  Tensor fc_x = code_buffer(fc.M * fc.K, dev), fc_w_codes = code_buffer(fc.N * fc.K, dev);
  Tensor proj_x = skipped ? Tensor() : code_buffer(proj.M * proj.K, dev);
  Tensor proj_w_codes = skipped ? Tensor() : code_buffer(proj.N * proj.K, dev);
  const Slots fs = slots_of(fc_scalars), ps = slots_of(proj_scalars);
  {
    if (op_timer::enabled()) op_timer::note_next({gemm_flops(fc), 0.0, gemm_label(fc)});
    op_timer::Scope timed("fp8_linear", xd);
    const cuda::Fp8LinearBuffers buf{bytes(fc_x), bytes(saved.fc_x_t), bytes(fc_w_codes), bytes(saved.fc_w_t),
                                     nullptr, nullptr};
    cuda::fp8_linear_forward(xd.data<bf16>(), fc_w.data().data<bf16>(),
                             fc_b.defined() ? fc_b.data().data<bf16>() : nullptr, saved.h.data<bf16>(), fc.M, fc.N,
                             fc.K, fs.x, fs.w, buf);
  }
  if (!skipped || saved.proj_x_t.defined()) {
    op_timer::Scope timed("gelu fp8_quantize", saved.h);
    if (proj.M > 0)
      cuda::fp8_gelu_quantize_transpose(saved.h.data<bf16>(), proj.M, proj.K, ps.x.scale, Fp8Format::E4M3,
                                        bytes(proj_x), bytes(saved.proj_x_t), ps.x.amax, ps.x.scale_inv);
  }
  if (skipped) {
    op_timer::Scope timed("fp8_linear codes", saved.h);
    cuda::fp8_linear_forward_saved_codes(nullptr, proj_w.data().data<bf16>(), proj.M, proj.N, proj.K, ps.x, ps.w,
                                         {nullptr, nullptr, nullptr, bytes(saved.proj_w_t), nullptr, nullptr});
  } else {
    if (op_timer::enabled()) op_timer::note_next({gemm_flops(proj), 0.0, gemm_label(proj)});
    op_timer::Scope timed("fp8_linear", saved.h);
    const cuda::Fp8LinearBuffers buf{bytes(proj_x), bytes(saved.proj_x_t), bytes(proj_w_codes),
                                     bytes(saved.proj_w_t), nullptr, nullptr};
    cuda::fp8_linear_forward_from_codes(proj_w.data().data<bf16>(),
                                        proj_b.defined() ? proj_b.data().data<bf16>() : nullptr, out.data<bf16>(),
                                        proj.M, proj.N, proj.K, ps.x, ps.w, buf);
  }

  // Backward reads the inputs only through their codes: they stay graph edges without their values.
  const Fp8GeluMlpInputs layout{fc_b.defined(), proj_b.defined()};
  std::vector<Variable> inputs = {x.without_data(), fc_w.without_data(), proj_w.without_data()};
  if (layout.fc_bias) inputs.push_back(fc_b.without_data());
  if (layout.proj_bias) inputs.push_back(proj_b.without_data());
  auto backward = [saved, fc, proj, layout, fc_scalars, proj_scalars](const Tensor& grad_out,
                                                                        std::vector<Variable>& in) {
    ND_CHECK(grad_out.dtype() == DType::BF16, "fp8_gelu_mlp backward: the output's gradient must be bf16");
    const GradSlot dx = in[0].grad_slot(), dfc_w = in[1].grad_slot(), dproj_w = in[2].grad_slot();
    const GradSlot dfc_b = layout.fc_bias ? in[layout.fc_b()].grad_slot() : GradSlot();
    const GradSlot dproj_b = layout.proj_bias ? in[layout.proj_b()].grad_slot() : GradSlot();
    const bool fc_wanted = dx.wanted() || dfc_w.wanted() || dfc_b.wanted();
    // Forward wrote the transposes for the gradients wanted then; one wanted now must have one.
    ND_CHECK((!dx.wanted() || saved.fc_w_t.defined()) && (!dfc_w.wanted() || saved.fc_x_t.defined()) &&
                 (!dproj_w.wanted() || saved.proj_x_t.defined()) && (!fc_wanted || saved.proj_w_t.defined()),
             "fp8_gelu_mlp backward: a gradient is wanted that did not need one in forward");
    const Slots fs = slots_of(fc_scalars), ps = slots_of(proj_scalars);
    const Device dev = grad_out.device();
    // c_proj: its weight and bias gradients, and its input's gradient dg (the GELU output's).
    Tensor dg = fc_wanted ? Tensor::empty(saved.h.shape(), DType::BF16, dev) : Tensor();
    {
      Tensor dout = fc_wanted ? code_buffer(proj.M * proj.N, dev) : Tensor();
      Tensor dout_t = dproj_w.wanted() ? code_buffer(proj.M * proj.N, dev) : Tensor();
      if (op_timer::enabled())
        op_timer::note_next({gemm_flops(proj) * ((fc_wanted ? 1 : 0) + (dproj_w.wanted() ? 1 : 0)), 0.0,
                             gemm_label(proj)});
      op_timer::Scope timed("fp8_linear backward", grad_out);
      const cuda::Fp8LinearBuffers buf{nullptr, bytes(saved.proj_x_t), nullptr, bytes(saved.proj_w_t), bytes(dout),
                                       bytes(dout_t)};
      cuda::fp8_linear_backward(grad_out.data<bf16>(), GradDest<bf16>{fc_wanted ? dg.data<bf16>() : nullptr, false},
                                dest(dproj_w), dest(dproj_b), proj.M, proj.N, proj.K, ps.x, ps.w, ps.dout, buf);
    }
    if (!fc_wanted) return;
    Tensor dout = dx.wanted() ? code_buffer(fc.M * fc.N, dev) : Tensor();
    Tensor dout_t = dfc_w.wanted() ? code_buffer(fc.M * fc.N, dev) : Tensor();
    {
      op_timer::Scope timed("gelu fp8_quantize backward", dg);
      if (dout.defined() || dout_t.defined()) {
        cuda::fp8_dgelu_quantize_transpose(dg.data<bf16>(), saved.h.data<bf16>(), fc.M, fc.N, fs.dout.scale,
                                           Fp8Format::E5M2, bytes(dout), bytes(dout_t), fs.dout.amax,
                                           fs.dout.scale_inv, dest(dfc_b));
      } else if (dfc_b.wanted()) {
        // Only c_fc's bias: the unfused pieces, which quantise nothing (fp8_linear records no amax
        // without a GEMM).
        Tensor dh = Tensor::empty(saved.h.shape(), DType::BF16, dev);
        cuda::gelu_backward(saved.h.data<bf16>(), dg.data<bf16>(), GradDest<bf16>{dh.data<bf16>(), false},
                            dh.numel());
        cuda::fp8_linear_backward(dh.data<bf16>(), GradDest<bf16>{}, GradDest<bf16>{}, dest(dfc_b), fc.M, fc.N, fc.K,
                                  fs.x, fs.w, fs.dout, cuda::Fp8LinearBuffers{});
      }
    }
    if (op_timer::enabled())
      op_timer::note_next(
          {gemm_flops(fc) * ((dx.wanted() ? 1 : 0) + (dfc_w.wanted() ? 1 : 0)), 0.0, gemm_label(fc)});
    op_timer::Scope timed("fp8_linear backward", dg);
    const cuda::Fp8LinearBuffers buf{nullptr, bytes(saved.fc_x_t), nullptr, bytes(saved.fc_w_t), bytes(dout),
                                     bytes(dout_t)};
    cuda::fp8_linear_backward_from_codes(dest(dx), dest(dfc_w), fc.M, fc.N, fc.K, fs.x, fs.w, fs.dout, buf);
  };
  if (skipped) return make_result_without_value({out_shape, DType::BF16, dev}, std::move(inputs), backward);
  return make_result(out, std::move(inputs), backward);
#else
  (void)fc, (void)fc_scalars, (void)proj_w, (void)proj_b, (void)proj_scalars;
  ND_FAIL("fp8_gelu_mlp: this nanodist was built without CUDA");
#endif
}

}  // namespace nd::ops

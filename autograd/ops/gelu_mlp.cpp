// ops::gelu_mlp: the MLP's c_fc, GELU and c_proj as one op, so that on the GPU the GELU runs in the
// epilogue of the c_fc GEMM (kernels/*/linear.*: linear_gelu_forward): the (M, H) activations cross
// memory once fewer in the forward than with linear, gelu and linear as separate ops. The backward
// runs c_proj's input-gradient GEMM, the GELU gradient and c_fc's bias sum as separate kernels
// (linear_dgelu_backward; the DGELU epilogue was slower, see there). Saves the GELU input and output.
#include <string>

#include "autograd/dispatch.h"
#include "autograd/ops.h"
#include "autograd/ops/linear_dims.h"
#include "autograd/weight_grad_queue.h"
#include "autograd/without_forward.h"
#include "kernels/cpu/linear.h"
#include "kernels/cuda/linear.h"

namespace nd::ops {

namespace {

// What backward reads besides the inputs: the GELU input (M, H) and output (M, H).
struct GeluMlpSaved {
  Tensor pre, hidden;
};

// The inputs as the node keeps them: x, fc_w, proj_w, then the biases that are defined.
struct GeluMlpInputs {
  bool fc_bias, proj_bias;
  int fc_b() const { return 3; }
  int proj_b() const { return fc_bias ? 4 : 3; }
};

}  // namespace

Variable gelu_mlp(const Variable& x, const Variable& fc_w, const Variable& fc_b, const Variable& proj_w,
                  const Variable& proj_b) {
  const Tensor& xd = x.data();
  const LinearDims fc = linear_dims("gelu_mlp (fc)", xd, fc_w.data(), fc_b.defined() ? &fc_b.data() : nullptr);
  Shape hidden_shape = xd.shape();
  hidden_shape.back() = fc.N;
  const GeluMlpSaved saved{Tensor::empty(hidden_shape, xd.dtype(), xd.device()),
                           Tensor::empty(hidden_shape, xd.dtype(), xd.device())};
  const LinearDims proj =
      linear_dims("gelu_mlp (proj)", saved.hidden, proj_w.data(), proj_b.defined() ? &proj_b.data() : nullptr);
  Shape out_shape = xd.shape();
  out_shape.back() = proj.N;
  // Without its forward (autograd/without_forward.h) c_fc and the GELU still run, for the two
  // tensors backward reads, but c_proj's product, the output, does not.
  const bool skipped = forward_skipped();
  Tensor out = skipped ? Tensor() : Tensor::empty(out_shape, xd.dtype(), xd.device());
  if (op_timer::enabled()) {  // named by the products it runs: K->H->N, or K->H without c_proj's
    const std::string fc_dims = gemm_label(fc);
    op_timer::note_next({gemm_flops(fc) + (skipped ? 0.0 : gemm_flops(proj)), 0.0,
                         skipped ? fc_dims : fc_dims + "->" + std::to_string(proj.N)});
  }
  ND_DISPATCH_KERNEL(xd, "gelu_mlp", {
    backend::linear_gelu_forward(xd.data<scalar_t>(), fc_w.data().data<scalar_t>(),
                                 fc_b.defined() ? fc_b.data().data<scalar_t>() : nullptr,
                                 saved.hidden.data<scalar_t>(), saved.pre.data<scalar_t>(), fc.M, fc.N, fc.K);
    if (!skipped)
      backend::linear_forward(saved.hidden.data<scalar_t>(), proj_w.data().data<scalar_t>(),
                              proj_b.defined() ? proj_b.data().data<scalar_t>() : nullptr, out.data<scalar_t>(),
                              proj.M, proj.N, proj.K);
  });
  const GeluMlpInputs layout{fc_b.defined(), proj_b.defined()};
  std::vector<Variable> inputs = {x, fc_w, proj_w};
  if (layout.fc_bias) inputs.push_back(fc_b);
  if (layout.proj_bias) inputs.push_back(proj_b);
  auto backward = [saved, fc, proj, layout](const Tensor& grad_out, std::vector<Variable>& in) {
    const Tensor& x = in[0].data();
    const Tensor& fc_w = in[1].data();
    const Tensor& proj_w = in[2].data();
    if (WeightGradientQueue* deferred = deferred_weight_gradients()) {
      // Zero-bubble: the input gradient (and c_fc's bias, beside dpre) now; the two weight
      // products and c_proj's bias when the queue runs.
      Tensor dpre = Tensor::empty(saved.pre.shape(), saved.pre.dtype(), saved.pre.device());
      const GradSlot dfc_b = layout.fc_bias ? in[layout.fc_b()].grad_slot() : GradSlot();
      const GradSlot dx = in[0].grad_slot();
      ND_DISPATCH_KERNEL(x, "gelu_mlp backward (input)", {
        backend::linear_dgelu_backward(grad_out.data<scalar_t>(), proj_w.data<scalar_t>(),
                                       saved.pre.data<scalar_t>(), dpre.data<scalar_t>(),
                                       grad_dest<scalar_t>(dfc_b), proj.M, proj.N, proj.K);
        if (dx.wanted())
          backend::linear_backward(dpre.data<scalar_t>(), x.data<scalar_t>(), fc_w.data<scalar_t>(),
                                   grad_dest<scalar_t>(dx), GradDest<scalar_t>{}, GradDest<scalar_t>{}, fc.M, fc.N,
                                   fc.K);
      });
      deferred->push([=, dout = grad_out, x = x, fc_w = fc_w, proj_w = proj_w, fc_wv = in[1], proj_wv = in[2],
                      proj_bv = layout.proj_bias ? in[layout.proj_b()] : Variable()]() mutable {
        const GradSlot dproj_w = proj_wv.grad_slot();
        const GradSlot dproj_b = proj_bv.defined() ? proj_bv.grad_slot() : GradSlot();
        const GradSlot dfc_w = fc_wv.grad_slot();
        ND_DISPATCH_KERNEL(x, "gelu_mlp backward (weight)", {
          if (dproj_w.wanted() || dproj_b.wanted())
            backend::linear_backward(dout.data<scalar_t>(), saved.hidden.data<scalar_t>(), proj_w.data<scalar_t>(),
                                     GradDest<scalar_t>{}, grad_dest<scalar_t>(dproj_w),
                                     grad_dest<scalar_t>(dproj_b), proj.M, proj.N, proj.K);
          if (dfc_w.wanted())
            backend::linear_backward(dpre.data<scalar_t>(), x.data<scalar_t>(), fc_w.data<scalar_t>(),
                                     GradDest<scalar_t>{}, grad_dest<scalar_t>(dfc_w), GradDest<scalar_t>{}, fc.M,
                                     fc.N, fc.K);
        });
      });
      return;
    }
    const GradSlot dproj_w = in[2].grad_slot();
    const GradSlot dproj_b = layout.proj_bias ? in[layout.proj_b()].grad_slot() : GradSlot();
    const bool fc_wanted = in[0].requires_grad() || in[1].requires_grad() ||
                           (layout.fc_bias && in[layout.fc_b()].requires_grad());
    ND_DISPATCH_KERNEL(x, "gelu_mlp backward", {
      // c_proj: its weight and bias gradients; its input gradient goes through the GELU below.
      if (dproj_w.wanted() || dproj_b.wanted())
        backend::linear_backward(grad_out.data<scalar_t>(), saved.hidden.data<scalar_t>(),
                                 proj_w.data<scalar_t>(), GradDest<scalar_t>{}, grad_dest<scalar_t>(dproj_w),
                                 grad_dest<scalar_t>(dproj_b), proj.M, proj.N, proj.K);
      if (fc_wanted) {
        // dpre (M, H) = (dout · proj_w) * gelu'(pre), with c_fc's bias gradient beside it.
        Tensor dpre = Tensor::empty(saved.pre.shape(), saved.pre.dtype(), saved.pre.device());
        const GradSlot dfc_b = layout.fc_bias ? in[layout.fc_b()].grad_slot() : GradSlot();
        backend::linear_dgelu_backward(grad_out.data<scalar_t>(), proj_w.data<scalar_t>(),
                                       saved.pre.data<scalar_t>(), dpre.data<scalar_t>(),
                                       grad_dest<scalar_t>(dfc_b), proj.M, proj.N, proj.K);
        const GradSlot dx = in[0].grad_slot(), dfc_w = in[1].grad_slot();
        backend::linear_backward(dpre.data<scalar_t>(), x.data<scalar_t>(), fc_w.data<scalar_t>(),
                                 grad_dest<scalar_t>(dx), grad_dest<scalar_t>(dfc_w), GradDest<scalar_t>{}, fc.M,
                                 fc.N, fc.K);
      }
    });
  };
  if (skipped) return make_result_without_value({out_shape, xd.dtype(), xd.device()}, std::move(inputs), backward);
  return make_result(out, std::move(inputs), backward);
}

}  // namespace nd::ops

// The switches of the fused ops, so that each fusion can be measured against the unfused ops with
// one binary. Read once from the environment variable NANODIST_FUSIONS: unset or "all" turns every
// fusion on (the default), "none" turns them all off, and a comma-separated list of names turns on
// those alone (e.g. NANODIST_FUSIONS=gelu_mlp). An unknown name is an nd::Error listing the names.
#pragma once
#include <string>

namespace nd {

struct Fusions {
  // nn::MLP runs c_fc, GELU and c_proj as one ops::gelu_mlp (cuBLASLt GELU epilogue on the GPU).
  bool gelu_mlp = true;
  // With gelu_mlp and both MLP linears in FP8: ops::fp8_gelu_mlp applies the GELU (and its
  // gradient) inside the FP8 quantises, so the bf16 GELU output and its gradient are never written.
  bool fp8_gelu_mlp = true;
  // ops::add's backward hands its gradient buffer to the first input where that input has no
  // gradient yet (the residual stream), instead of copying it: one write of the activations fewer.
  bool residual_grad = true;
  // The cross-entropy forward writes the logits' gradient as it reads the logits, for a loss whose
  // backward seed it was told at forward time (ops::LossGradient): the backward makes no pass over
  // the (B*T, V) logits, and the training step has the gradient written over the logits in place.
  bool cross_entropy_grad = true;
  // A recomputed block's rerun (--recompute block) records its tail without its forward
  // (autograd/without_forward.h): the MLP's c_proj product, bias, collective and dropout and the
  // second residual add, whose values backward does not read, are not computed again.
  bool recompute_tail = true;
};

// The switches in force: NANODIST_FUSIONS, parsed on the first call, or a ScopedFusions' value.
const Fusions& fusions();

// `text` as NANODIST_FUSIONS reads it; nd::Error on an unknown name.
Fusions parse_fusions(const std::string& text);

// For tests: other switches while it lives (not thread-safe; the previous ones come back after).
class ScopedFusions {
 public:
  explicit ScopedFusions(const Fusions& f);
  ~ScopedFusions();
  ScopedFusions(const ScopedFusions&) = delete;
  ScopedFusions& operator=(const ScopedFusions&) = delete;

 private:
  Fusions previous_;
};

}  // namespace nd

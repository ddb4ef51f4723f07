// ops::fp8_gelu_mlp: an MLP's c_fc, GELU and c_proj as one op when both linears run in FP8, equal
// bit for bit to fp8_linear(gelu(fp8_linear(x))) but for the rounding order of c_fc's bias
// gradient: the GELU is applied inside c_proj's input quantise (and its gradient inside c_fc's
// output-gradient quantise, with c_fc's bias sums), so the bf16 GELU output and GELU-input
// gradient, which the unfused ops write only to read back once for quantising, never exist.
#pragma once
#include "autograd/variable.h"

namespace nd::ops {

// x (..., C) bf16 on a GPU with FP8 tensor cores; fc_w (H, C), fc_b (H) or undefined, proj_w
// (C', H), proj_b (C') or undefined, all bf16; fc_scalars and proj_scalars the two linears' device
// scalars (fp8_linear.h's layout), whose amaxes and scales are used as the two separate
// fp8_linears would use them. The token count and C, H, C' must be multiples of 16. -> (..., C').
// Saves the GELU input (..., H) in bf16 and the FP8 codes backward reads. nd::Error otherwise.
Variable fp8_gelu_mlp(const Variable& x, const Variable& fc_w, const Variable& fc_b, const Tensor& fc_scalars,
                      const Variable& proj_w, const Variable& proj_b, const Tensor& proj_scalars);

}  // namespace nd::ops

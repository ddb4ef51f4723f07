// f16 on the CPU: the kernels of nd::cpu under the names the ops call (autograd/dispatch.h binds
// `backend` here for f16 tensors), each emulating its CUDA f16 kernel with the f32 reference: the
// f16 inputs widened to f32, the f32 kernel run, each f16 output rounded once (nearest even), a
// gradient that is added to read from its f16 buffer and rounded back after the sum, as the GPU's
// kernels load f16, compute in f32 and store f16. Per-row statistics stay f32 (StatType<f16>).
// Slow (every call copies its operands) and meant for tests: it lets CI train --dtype fp16.
#pragma once
#include <cstdint>

#include "kernels/attention_dropout.h"
#include "kernels/kernel_args.h"
#include "tensor/random.h"

namespace nd::cpu_f16 {

// Shapes and meanings as in the kernels/cpu/<op>.h of the same name.
void add_forward(const f16* a, const f16* b, f16* out, int64_t n);
void add_backward(const f16* dout, GradDest<f16> da, GradDest<f16> db, int64_t n);

void bias_add_forward(const f16* x, const f16* b, f16* out, int64_t M, int64_t N);
void bias_add_backward(const f16* dout, f16* db, int64_t M, int64_t N);

// The loss and its seed (dloss, announced) are f32, as on the GPU.
void cross_entropy_forward(const f16* logits, const int32_t* targets, float* loss, float* row_lse, float* count,
                           int64_t N, int64_t Vp, int64_t V);
void cross_entropy_backward(const f16* logits, const int32_t* targets, const float* row_lse, const float* count,
                            const float* dloss, GradDest<f16> dlogits, int64_t N, int64_t Vp, int64_t V);
void cross_entropy_forward_with_grad(const f16* logits, const int32_t* targets, const float* dloss, float* loss,
                                     float* row_lse, float* count, f16* dlogits, int64_t N, int64_t Vp, int64_t V);
void cross_entropy_rescale_grad(const float* dloss, const float* announced, f16* dlogits, int64_t n);

void dropout_forward(const f16* x, f16* out, int64_t n, float p, const PhiloxCounters& rng);
void dropout_backward(const f16* dout, GradDest<f16> dx, int64_t n, float p, const PhiloxCounters& rng);

void embedding_forward(const int32_t* idx, const f16* wte, const f16* wpe, f16* out, int64_t B, int64_t S, int64_t C,
                       int64_t V);
void embedding_backward(const int32_t* idx, const f16* dout, GradDest<f16> dwte, GradDest<f16> dwpe, int64_t B,
                        int64_t S, int64_t C, int64_t V, int64_t P);

void gelu_forward(const f16* x, f16* out, int64_t n);
void gelu_backward(const f16* x, const f16* dout, GradDest<f16> dx, int64_t n);

void layernorm_forward(const f16* x, const f16* w, const f16* b, f16* out, float* mean, float* rstd, int64_t N,
                       int64_t C, float eps);
void layernorm_backward(const f16* dout, const f16* x, const f16* w, const float* mean, const float* rstd,
                        GradDest<f16> dx, GradDest<f16> dw, GradDest<f16> db, int64_t N, int64_t C);

void linear_forward(const f16* x, const f16* w, const f16* b, f16* out, int64_t M, int64_t N, int64_t K);
void linear_backward(const f16* dout, const f16* x, const f16* w, GradDest<f16> dx, GradDest<f16> dw,
                     GradDest<f16> db, int64_t M, int64_t N, int64_t K);
bool linear_gelu_forward(const f16* x, const f16* w, const f16* b, f16* out, f16* pre, int64_t M, int64_t N,
                         int64_t K);
void linear_dgelu_backward(const f16* dout, const f16* w, const f16* pre, f16* dpre, GradDest<f16> db, int64_t M,
                           int64_t N, int64_t K);

void normal_fill(f16* out, const ElementSlice& slice, const PhiloxCounters& rng, double mean, double std);

void attention_forward(const f16* qkv, f16* out, float* lse, int64_t B, int64_t T, int64_t C, int64_t NH,
                       const AttentionDropout& dropout = {});
void attention_backward(const f16* dout, const f16* qkv, const f16* out, const float* lse, GradDest<f16> dqkv,
                        int64_t B, int64_t T, int64_t C, int64_t NH, const AttentionDropout& dropout = {});

void vocab_parallel_ce_local_stats(const f16* logits, const int32_t* targets, float* row_max, float* stats, int64_t N,
                                   int64_t Vl, int64_t valid, int64_t vocab_start);
void vocab_parallel_ce_rescale(const float* row_max, float* stats, int64_t N);
void vocab_parallel_ce_loss(const float* row_max, const float* stats, const int32_t* targets, float* loss,
                            float* row_lse, float* count, int64_t N, int64_t V);
void vocab_parallel_ce_backward(const f16* logits, const int32_t* targets, const float* row_lse, const float* count,
                                const float* dloss, f16* dlogits, int64_t N, int64_t Vl, int64_t valid,
                                int64_t vocab_start, bool accumulate);

void vocab_parallel_embedding_forward(const int32_t* idx, const f16* wte, f16* out, int64_t n, int64_t C,
                                      int64_t vocab_start, int64_t Vl);
void vocab_parallel_embedding_backward(const int32_t* idx, const f16* dout, f16* dwte, int64_t n, int64_t C,
                                       int64_t vocab_start, int64_t Vl);

}  // namespace nd::cpu_f16
